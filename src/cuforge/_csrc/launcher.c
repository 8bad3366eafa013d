/* cuforge._claunch: checked launches in C.
 *
 * Checking a call's arguments and launching through a Python wrapper cost host time on every
 * call (docs/benchmarks.md has the figures). This module is the fast path: each kernel gets
 * a Launcher, which checks and packs a call (check.c) and launches it (driver.c), and
 * cuforge.Kernel derives from KernelBase, whose tp_call hands calls to the Launcher with no
 * Python frame in between. Whatever the Launcher declines (an error to
 * explain, host arrays to stage, memory whose device CUDA must be asked, a first launch on a
 * device) goes to the kernel's general path, _launch_general, with no CUDA call made here.
 *
 * Built against the stable ABI (CPython 3.10+), so one binary serves every version. It is
 * optional: without it the general path serves every call and launches through cuda.bindings.
 *
 * Cooperative and clustered kernels get no Launcher: their checks need the device on every
 * call (occupancy, cluster support), so the general path takes them.
 */
#include "claunch.h"
#include <structmember.h>

#if defined(_MSC_VER)
#define THREAD_LOCAL __declspec(thread)
#else
#define THREAD_LOCAL _Thread_local
#endif

/* The device this thread launches on (-1: none made current yet), mirroring _runtime.device.state.tls.device,
 * and that device's primary context, which must be current for the C launcher to launch. */
static THREAD_LOCAL long long thread_device = -1;
static THREAD_LOCAL void *thread_ctx = NULL;
/* Set while this thread captures a cf.graph(): its launches then take the general path
 * (_launch/capture.py), which sends them to the capture stream and refuses what a graph cannot hold. */
static THREAD_LOCAL int thread_capturing = 0;
/* Launches that run on the CPU (cuforge's CPU backend) take the general path: this thread's
 * choice (cf.set_device: 1 the CPU, 0 a GPU, -1 none), else the process's (CUFORGE_DEVICE). */
static THREAD_LOCAL int thread_cpu = -1;
static int process_cpu = 0;

static PyObject *launcher_type, *zero, *s_launch_general, *s_current_device, *s_id, *on_error, *option_names[4];

/* set_thread_device(ordinal, primary context address) */
static PyObject *set_thread_device(PyObject *module, PyObject *args) {
    (void)module;
    long long d;
    PyObject *ctx;
    if (!PyArg_ParseTuple(args, "LO", &d, &ctx)) return NULL;
    void *c = PyLong_AsVoidPtr(ctx);
    if (c == NULL && PyErr_Occurred()) return NULL;
    thread_device = d, thread_ctx = c;
    Py_RETURN_NONE;
}

/* set_cpu(thread, process): -1 leaves that one as it is */
static PyObject *set_cpu(PyObject *module, PyObject *args) {
    (void)module;
    int t, p;
    if (!PyArg_ParseTuple(args, "ii", &t, &p)) return NULL;
    if (t >= -1) thread_cpu = t;
    if (p >= 0) process_cpu = p;
    Py_RETURN_NONE;
}

/* set_capturing(flag) */
static PyObject *set_capturing(PyObject *module, PyObject *flag) {
    (void)module;
    int on = PyObject_IsTrue(flag);
    if (on < 0) return NULL;
    thread_capturing = on;
    Py_RETURN_NONE;
}

/* The call after check_and_pack: Py_True launched (or nothing to launch), Py_False declined
 * with no CUDA call made, NULL raised. */
static PyObject *launcher_run(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *named,
                              PyObject *grid, PyObject *block, PyObject *shared, PyObject *stream) {
    Packed p;
    if (!has_entry() || thread_capturing) Py_RETURN_FALSE; /* no device yet, CUFORGE_LAUNCHER=bindings, a capture */
    if (thread_cpu == 1 || (thread_cpu < 0 && process_cpu)) Py_RETURN_FALSE; /* the CPU backend's */
    int r = check_and_pack(self, args, nargs, named, grid, block, shared, stream, &p);
    if (r < 0) return NULL;
    if (r == DECLINE) Py_RETURN_FALSE;
    if (r == NOTHING) Py_RETURN_TRUE; /* the sizing array is empty */
    /* Checks done: from here on CUDA is used (current_device() starts it in a new thread). */
    long long did = thread_device;
    if (did < 0 && adopt_thread(&thread_ctx)) did = thread_device = 0; /* a new thread: see driver.c */
    if (did < 0) {
        PyObject *dev = PyObject_CallMethodObjArgs(cuda_module, s_current_device, NULL);
        if (dev == NULL) return NULL;
        PyObject *id = PyObject_GetAttr(dev, s_id);
        Py_DECREF(dev);
        if (id == NULL) return NULL;
        did = PyLong_AsLongLong(id);
        Py_DECREF(id);
        if (did == -1 && PyErr_Occurred()) return NULL;
    }
    for (int i = 0; i < p.narrays; i++)
        if (p.devices[i] != did) Py_RETURN_FALSE; /* host arrays to stage, memory elsewhere: launch there */
    /* Another context made current behind cuforge's back (CuPy's `with Device(1)`): the general
     * path finds the device the arrays are on and launches there. */
    if (!context_is_current(thread_ctx)) Py_RETURN_FALSE;
    if (did != self->function_device) { /* kernel.py never changes a _by_device entry once made */
        PyObject *key = PyLong_FromLongLong(did);
        if (key == NULL) return NULL;
        PyObject *found = PyDict_GetItemWithError(self->by_device, key); /* borrowed */
        Py_DECREF(key);
        if (found == NULL) {
            if (PyErr_Occurred()) return NULL;
            Py_RETURN_FALSE; /* first launch on this device: the general path compiles and loads */
        }
        /* a _limits.Loaded: (handle, compiled, max_threads, max_shared, ...) */
        void *f = PyLong_AsVoidPtr(PyTuple_GetItem(found, 0));
        if (f == NULL && PyErr_Occurred()) return NULL;
        unsigned long long mt = PyLong_AsUnsignedLongLong(PyTuple_GetItem(found, 2));
        unsigned long long ms = PyLong_AsUnsignedLongLong(PyTuple_GetItem(found, 3));
        if (PyErr_Occurred()) return NULL;
        self->function = f, self->function_device = did, self->max_threads = mt, self->max_shared = ms;
    }
    /* Past what the loaded kernel allows: the general path names the limit, before any launch. */
    if ((unsigned long long)p.dims.block[0] * p.dims.block[1] * p.dims.block[2] > self->max_threads ||
        p.dims.smem > self->max_shared)
        Py_RETURN_FALSE;
    if (!p.have_stream && p.origin != 0) {
        PyObject *h = current_stream(p.origin, did);
        if (h == NULL) return NULL;
        p.dims.stream = PyLong_AsVoidPtr(h);
        Py_DECREF(h);
        if (p.dims.stream == NULL && PyErr_Occurred()) return NULL;
    }
    note_launch_c(self->name, &p.dims);
    int err = launch_ex(self->function, &p.dims, p.ptrs);
    if (err) {
        unsigned int *g = p.dims.grid, *b = p.dims.block;
        PyObject *res = PyObject_CallFunction(on_error, "i(III)(III)IO", err, g[0], g[1], g[2], b[0], b[1], b[2],
                                              p.dims.smem, self->name);
        Py_XDECREF(res);
        return NULL; /* on_error raises LaunchError */
    }
    Py_RETURN_TRUE;
}

/* Launcher.check_and_pack(args, kwargs, grid, block, shared_mem, stream): what the call would
 * launch, as (params bytes, grid, block, shared_mem, stream or None, array devices, origin),
 * None for nothing to launch, False for declined. No CUDA call: tests compare it with the
 * general path's on a machine without a GPU. */
static PyObject *launcher_check_and_pack(Launcher *self, PyObject *a) {
    PyObject *args, *named, *grid, *block, *shared, *stream;
    Packed p;
    if (!PyArg_ParseTuple(a, "O!OOOOO", &PyTuple_Type, &args, &named, &grid, &block, &shared, &stream)) return NULL;
    Py_ssize_t n = PyTuple_Size(args);
    PyObject *argv[MAX_PARAMS];
    if (n > MAX_PARAMS) Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < n; i++) argv[i] = PyTuple_GetItem(args, i);
    int r = check_and_pack(self, argv, n, named == Py_None || PyDict_Size(named) == 0 ? NULL : named, grid, block,
                           shared, stream, &p);
    if (r < 0) return NULL;
    if (r == DECLINE) Py_RETURN_FALSE;
    if (r == NOTHING) Py_RETURN_NONE;
    PyObject *devices = PyTuple_New(p.narrays);
    if (devices == NULL) return NULL;
    for (int i = 0; i < p.narrays; i++) PyTuple_SetItem(devices, i, PyLong_FromLongLong(p.devices[i]));
    PyObject *h = p.have_stream ? PyLong_FromVoidPtr(p.dims.stream) : (Py_INCREF(Py_None), Py_None);
    unsigned int *g = p.dims.grid, *b = p.dims.block;
    return Py_BuildValue("(y#(III)(III)INNi)", (const char *)p.buf, (Py_ssize_t)self->size, g[0], g[1], g[2], b[0], b[1],
                         b[2], p.dims.smem, h, devices, p.origin);
}

/* The Python objects a Launcher holds, for traverse and clear alike. */
#define LAUNCHER_OBJECTS(X) X(name) X(by_device) X(grid_fn) X(attrs) X(last_grid) X(last_block)
#define SPEC_OBJECTS(X) X(name) X(dtype) X(seen) X(convert)

static int launcher_traverse(Launcher *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self)); /* instances of heap types hold their type */
#define VISIT(field) Py_VISIT(self->field);
    LAUNCHER_OBJECTS(VISIT)
#undef VISIT
#define VISIT(field) Py_VISIT(self->spec[i].field);
    for (int i = 0; i < self->nparams; i++) {
        SPEC_OBJECTS(VISIT)
    }
#undef VISIT
    return 0;
}

static int launcher_clear(Launcher *self) {
#define CLEAR(field) Py_CLEAR(self->field);
    LAUNCHER_OBJECTS(CLEAR)
#undef CLEAR
#define CLEAR(field) Py_CLEAR(self->spec[i].field);
    for (int i = 0; i < self->nparams; i++) {
        SPEC_OBJECTS(CLEAR)
    }
#undef CLEAR
    return 0;
}

static void launcher_dealloc(Launcher *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    launcher_clear(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

/* Whether parameter k exists and is an integer scalar (what a cf.blocks grid rule names). */
static int blocks_param(const Launcher *self, int k) {
    return k < self->nparams && (self->spec[k].kind == 'i' || self->spec[k].kind == 'u');
}

/* Launcher(name, specs, converters, by_device, grid_rule, grid_fn, block_default, attrs, smem_default=0):
 * specs are the kernel's ParamSpecs, converters each scalar's scalar_to_bytes (None for
 * arrays), by_device the kernel's {device: (function handle, compiled)}, attrs None or bytes
 * of CUlaunchAttribute records. */
static PyObject *launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    (void)kwargs;
    PyObject *name, *specs, *converters, *by_device, *grid_fn, *block_default, *attrs;
    int grid_rule;
    unsigned int smem_default = 0;
    if (!PyArg_ParseTuple(args, "UOOO!iOOO|I", &name, &specs, &converters, &PyDict_Type, &by_device, &grid_rule,
                          &grid_fn, &block_default, &attrs, &smem_default))
        return NULL;
    if (attrs != Py_None && (!PyBytes_Check(attrs) || PyBytes_Size(attrs) % 72 != 0)) {
        PyErr_SetString(PyExc_TypeError, "Launcher: attrs must be None or bytes of CUlaunchAttribute records");
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    Launcher *self = (Launcher *)alloc(type, 0);
    if (self == NULL) return NULL;
    self->nparams = self->size = 0;
#define KEEP(field) (Py_INCREF(field), self->field = field)
    KEEP(name), KEEP(by_device), KEEP(grid_fn), KEEP(attrs);
#undef KEEP
    self->grid_rule = grid_rule;
    self->smem_default = smem_default;
    self->function_device = -1;
    self->max_threads = self->max_shared = 0;
    if (read_specs(self, specs, converters) < 0 || dims3(block_default, "block_default", self->block_default) < 0 ||
        grid_rule >= self->nparams || (grid_rule <= -3 && !blocks_param(self, -3 - grid_rule))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "Launcher: grid_rule names no parameter");
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyMemberDef launcher_members[] = {
    {"kernel", T_OBJECT, offsetof(Launcher, name), READONLY, "the kernel's name"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef launcher_methods[] = {
    {"check_and_pack", (PyCFunction)launcher_check_and_pack, METH_VARARGS,
     "check_and_pack(args, kwargs, grid, block, shared_mem, stream): the packed call, None, or False (declined)"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot launcher_slots[] = {
    {Py_tp_members, launcher_members},
    {Py_tp_methods, launcher_methods},
    {Py_tp_new, launcher_new},
    {Py_tp_traverse, launcher_traverse},
    {Py_tp_clear, launcher_clear},
    {Py_tp_dealloc, launcher_dealloc},
    {Py_tp_doc, "A kernel's checked launch in C (see launcher.c)."},
    {0, NULL},
};

static PyType_Spec launcher_spec = {
    "cuforge._claunch.Launcher", sizeof(Launcher), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, launcher_slots,
};

/* ------------------------------------------------------------------ KernelBase */

/* The C part of a cuforge.Kernel: its Launcher (_fast, set by kernel.py; None where the C
 * launcher does not take the signature), read here without a dict lookup. */
typedef struct {
    PyObject_HEAD
    PyObject *fast;
} KernelBase;

/* kernel(*argv, grid=opt[0], block=opt[1], shared_mem=opt[2], stream=opt[3], **named): the
 * Launcher, else the general path. ``args`` is argv as a tuple where the caller has one (NULL:
 * made here when the general path needs it); ``named`` may be NULL. None, or NULL raised. */
static PyObject *launch_or_explain(PyObject *kernel, PyObject *const *argv, Py_ssize_t n, PyObject *args,
                                   PyObject *named, PyObject *const *opt) {
    PyObject *fast = ((KernelBase *)kernel)->fast, *r;
    if (fast != NULL && (PyObject *)Py_TYPE(fast) == launcher_type && n <= MAX_PARAMS) {
        Py_INCREF(fast);
        r = launcher_run((Launcher *)fast, argv, n, named, opt[0], opt[1], opt[2], opt[3]);
        Py_DECREF(fast);
        if (r == NULL) return NULL;
        if (r == Py_True) {
            Py_DECREF(r);
            Py_RETURN_NONE;
        }
        Py_DECREF(r);
    }
    /* Declined: the general path checks again, explains what is wrong, or handles the rare case. */
    PyObject *t = args, *d = named;
    if (t != NULL) {
        Py_INCREF(t);
    } else if ((t = PyTuple_New(n)) != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_INCREF(argv[i]);
            PyTuple_SetItem(t, i, argv[i]);
        }
    }
    if (d != NULL)
        Py_INCREF(d);
    else
        d = PyDict_New();
    r = t == NULL || d == NULL ? NULL
                               : PyObject_CallMethodObjArgs(kernel, s_launch_general, t, d, opt[0], opt[1], opt[2], opt[3], NULL);
    Py_XDECREF(t), Py_XDECREF(d);
    return r;
}

/* Calling a Kernel: kernel(*args, grid=None, block=None, shared_mem=0, stream=None, **kwargs).
 * CPython calls this tp_call directly, with no Python frame between the call and the checks. */
static PyObject *kernel_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *opt[4] = {Py_None, Py_None, zero, Py_None}; /* grid, block, shared_mem, stream */
    PyObject *named = NULL;                                /* kernel arguments passed by name */
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (kwargs != NULL && PyDict_Next(kwargs, &pos, &k, &v)) {
        int j = 0;
        while (j < 4 && k != option_names[j] && PyUnicode_Compare(k, option_names[j]) != 0) j++;
        if (j < 4) {
            opt[j] = v;
            continue;
        }
        if ((named == NULL && (named = PyDict_New()) == NULL) || PyDict_SetItem(named, k, v) < 0) {
            Py_XDECREF(named);
            return NULL;
        }
    }
    Py_ssize_t nargs = PyTuple_Size(args);
    PyObject *argv[MAX_PARAMS];
    for (Py_ssize_t i = 0; i < nargs && i < MAX_PARAMS; i++) argv[i] = PyTuple_GetItem(args, i);
    PyObject *r = launch_or_explain(self, argv, nargs, args, named, opt);
    Py_XDECREF(named);
    return r;
}

PyObject *call_kernel(PyObject *kernel, PyObject *const *argv, Py_ssize_t n) {
    PyObject *opt[4] = {Py_None, Py_None, zero, Py_None};
    return launch_or_explain(kernel, argv, n, NULL, NULL, opt);
}

static PyObject *kernel_base_type;

int is_kernel(PyObject *o) { return kernel_base_type != NULL && PyObject_TypeCheck(o, (PyTypeObject *)kernel_base_type); }

static int kernel_base_traverse(KernelBase *self, visitproc visit, void *arg) {
    Py_VISIT(self->fast);
    Py_VISIT(Py_TYPE(self)); /* instances of heap types hold their type */
    return 0;
}

static int kernel_base_clear(KernelBase *self) {
    Py_CLEAR(self->fast);
    return 0;
}

static void kernel_base_dealloc(KernelBase *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    kernel_base_clear(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static PyMemberDef kernel_base_members[] = {
    {"_fast", T_OBJECT, offsetof(KernelBase, fast), 0, "the kernel's Launcher, or None"},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot kernel_base_slots[] = {
    {Py_tp_call, kernel_call},
    {Py_tp_members, kernel_base_members},
    {Py_tp_traverse, kernel_base_traverse},
    {Py_tp_clear, kernel_base_clear},
    {Py_tp_dealloc, kernel_base_dealloc},
    {Py_tp_doc, "Calls a cuforge.Kernel from C (see launcher.c)."},
    {0, NULL},
};

static PyType_Spec kernel_base_spec = {
    "cuforge._claunch.KernelBase", sizeof(KernelBase), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    kernel_base_slots,
};

/* set_error_handler(raise_launch_error): called as (err, grid, block, shared_mem, kernel) */
static PyObject *set_error_handler(PyObject *module, PyObject *fn) {
    (void)module;
    Py_INCREF(fn);
    SET(on_error, fn);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"set_entry", py_set_entry, METH_VARARGS, "set_entry(address, ex): cuLaunchKernelEx's (ex) or cuLaunchKernel's address"},
    {"launch", (PyCFunction)(void (*)(void))py_launch, METH_FASTCALL,
     "launch(function, grid, block, shared_mem, stream, params, attrs=None) -> CUresult as an int."},
    {"set_thread_device", set_thread_device, METH_VARARGS,
     "set_thread_device(ordinal, context): this thread's launch device and its primary context"},
    {"set_cpu", set_cpu, METH_VARARGS, "set_cpu(thread, process): launches on the CPU (1), a GPU (0), unchanged (-2/-1)"},
    {"set_capturing", set_capturing, METH_O, "set_capturing(flag): this thread captures a cf.graph() (the C path declines)"},
    {"set_context", py_set_context, METH_VARARGS,
     "set_context(cuCtxGetCurrent, cuCtxSetCurrent, primary context of device 0): new threads' first launches"},
    {"note_launch", py_note_launch, METH_VARARGS, "note_launch(kernel, grid, block, shared_mem): record a launch"},
    {"last_launch", py_last_launch, METH_NOARGS, "last_launch() -> (kernel, grid, block, shared_mem) or None"},
    {"recent_launches", py_recent_launches, METH_NOARGS, "recent_launches() -> the last 8 launch records, newest first"},
    {"launch_count", py_launch_count, METH_NOARGS, "launch_count() -> launches recorded in this process"},
    {"configure", py_configure, METH_VARARGS,
     "configure(cuda_module, by_numpy, by_torch, array_arg, dims, dims_memo, grid_limit, block_limit, stream_handle)"},
    {"set_array_types", py_set_array_types, METH_VARARGS,
     "set_array_types(cupy_type, cupy_stream, torch_type, torch_stream, own_type)"},
    {"set_error_handler", set_error_handler, METH_O, "set_error_handler(fn): raises LaunchError for a CUresult"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "cuforge._claunch", "cuforge's launch path in C (see src/cuforge/_csrc/).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__claunch(void) {
    if ((s_launch_general = PyUnicode_InternFromString("_launch_general")) == NULL ||
        (s_current_device = PyUnicode_InternFromString("current_device")) == NULL ||
        (s_id = PyUnicode_InternFromString("id")) == NULL || (zero = PyLong_FromLong(0)) == NULL)
        return NULL;
    const char *options[4] = {"grid", "block", "shared_mem", "stream"};
    for (int i = 0; i < 4; i++)
        if ((option_names[i] = PyUnicode_InternFromString(options[i])) == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "MAX_PARAMS", MAX_PARAMS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_PARAM_BYTES", MAX_PARAM_BYTES) < 0)
        goto fail;
    PyObject *t = PyType_FromSpec(&launcher_spec);
    if (t == NULL || PyModule_AddObject(m, "Launcher", t) < 0) {
        Py_XDECREF(t);
        goto fail;
    }
    launcher_type = t;
    Py_INCREF(t); /* kept: the module's reference went to its dict */
    PyObject *base = PyType_FromSpec(&kernel_base_spec);
    if (base == NULL || PyModule_AddObject(m, "KernelBase", base) < 0) {
        Py_XDECREF(base);
        goto fail;
    }
    kernel_base_type = base;
    Py_INCREF(base); /* kept: the module's reference went to its dict */
    PyObject *runner = PyType_FromSpec(&oprunner_spec);
    if (runner == NULL || PyModule_AddObject(m, "OpRunner", runner) < 0) {
        Py_XDECREF(runner);
        goto fail;
    }
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
