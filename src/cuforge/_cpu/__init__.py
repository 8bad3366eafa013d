"""The CPU backend: a kernel's CUDA C++ compiled for the host and run on a pool of threads."""
