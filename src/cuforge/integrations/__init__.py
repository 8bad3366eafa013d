"""cuforge with other tools: IPython, pytest, PyTorch, testing helpers, the command line.
Each is imported only when used; the core never imports one."""
