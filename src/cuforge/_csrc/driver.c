/* The driver's launch entry points, the raw launch, and the record of the latest launch.
 *
 * _runtime/launch.py finds the entry point with cuGetProcAddress (so the legacy or per-thread default
 * stream follows cuda.bindings' setting) and hands its address to set_entry(). Launches go
 * through cuLaunchKernelEx with a launch-attribute list, which is how the cooperative flag,
 * cluster dimensions and programmatic stream serialization reach the driver; a driver older
 * than CUDA 12.0 gets cuLaunchKernel, and a launch with attributes then answers
 * CUDA_ERROR_NOT_SUPPORTED. The driver is called with the GIL released, as cuda.core and
 * CuPy call it from Cython.
 */
#include "claunch.h"

/* The CUDA 12.0 ABI of cuLaunchKernelEx's configuration (cuda.h: CUlaunchConfig). */
typedef struct {
    unsigned int grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem;
    void *stream;
    const void *attrs;
    unsigned int nattrs;
} CuLaunchConfig;

typedef int (*launch_kernel_ex_fn)(const CuLaunchConfig *config, void *f, void **params, void **extra);
typedef int (*launch_kernel_fn)(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int shared_mem, void *stream, void **params,
                                void **extra);

static launch_kernel_ex_fn entry_ex = NULL;
static launch_kernel_fn entry_legacy = NULL;

int has_entry(void) { return entry_ex != NULL || entry_legacy != NULL; }

/* set_entry(address, ex): cuLaunchKernelEx's address (ex true) or cuLaunchKernel's; 0 unsets. */
PyObject *py_set_entry(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *address;
    int ex;
    if (!PyArg_ParseTuple(args, "Op", &address, &ex)) return NULL;
    void *p = PyLong_AsVoidPtr(address);
    if (p == NULL && PyErr_Occurred()) return NULL;
    entry_ex = ex ? (launch_kernel_ex_fn)p : NULL;
    entry_legacy = ex ? NULL : (launch_kernel_fn)p;
    Py_RETURN_NONE;
}

int launch_ex(void *function, const LaunchDims *d, void **params) {
    int err;
    if (entry_ex != NULL) {
        CuLaunchConfig cfg = {d->grid[0], d->grid[1], d->grid[2], d->block[0], d->block[1], d->block[2],
                              d->smem,    d->stream,  d->attrs,   d->nattrs};
        /* The launch blocks while the driver's queue is full: let other threads run meanwhile. */
        Py_BEGIN_ALLOW_THREADS
        err = entry_ex(&cfg, function, params, NULL);
        Py_END_ALLOW_THREADS
    } else if (entry_legacy != NULL) {
        if (d->nattrs) return CUDA_ERROR_NOT_SUPPORTED;
        Py_BEGIN_ALLOW_THREADS
        err = entry_legacy(function, d->grid[0], d->grid[1], d->grid[2], d->block[0], d->block[1], d->block[2],
                           d->smem, d->stream, params, NULL);
        Py_END_ALLOW_THREADS
    } else {
        err = CUDA_ERROR_NOT_INITIALIZED;
    }
    return err;
}

/* ------------------------------------------------------------------ a new thread's context
 *
 * A thread's first launch makes device 0's primary context current (the default device of a
 * thread that never called cuforge.set_device). _runtime/device.py does that the first time per
 * process (through ctypes, _runtime/libcuda.py) and then hands the context and the driver's
 * cuCtxGetCurrent and cuCtxSetCurrent here, so that each further thread's first launch costs
 * two short driver calls instead of a trip through Python, whose driver calls each give up
 * the GIL. */
typedef int (*ctx_get_fn)(void **ctx);
typedef int (*ctx_set_fn)(void *ctx);
static ctx_get_fn ctx_get = NULL;
static ctx_set_fn ctx_set = NULL;
static void *primary0 = NULL;

/* set_context(cuCtxGetCurrent address, cuCtxSetCurrent address, device 0's primary context) */
PyObject *py_set_context(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *a, *b, *c;
    if (!PyArg_ParseTuple(args, "OOO", &a, &b, &c)) return NULL;
    void *get = PyLong_AsVoidPtr(a), *set = PyLong_AsVoidPtr(b), *ctx = PyLong_AsVoidPtr(c);
    if (PyErr_Occurred()) return NULL;
    ctx_get = (ctx_get_fn)get, ctx_set = (ctx_set_fn)set, primary0 = ctx;
    Py_RETURN_NONE;
}

/* A new thread's first launch: make device 0's primary context current (unless another
 * context is), and tell the caller which context that is; 1 done, 0 left to Python. */
int adopt_thread(void **ctx) {
    void *cur = NULL;
    if (ctx_get == NULL || ctx_set == NULL || primary0 == NULL || ctx_get(&cur) != 0) return 0;
    if (cur != NULL && cur != primary0) return 0; /* another device's: the general path looks closer */
    if (cur == NULL && ctx_set(primary0) != 0) return 0;
    *ctx = primary0;
    return 1;
}

/* Whether ctx is this thread's current context (a cheap thread-local read in the driver);
 * true when the context functions are unknown (the general path then set the thread up). */
int context_is_current(void *ctx) {
    void *cur = NULL;
    if (ctx_get == NULL) return 1;
    return ctx_get(&cur) == 0 && cur == ctx;
}

/* Three unsigned ints from a 3-tuple of ints; -1 with an exception set otherwise. */
int dims3(PyObject *t, const char *what, unsigned int out[3]) {
    if (!PyTuple_Check(t) || PyTuple_Size(t) != 3) {
        PyErr_Format(PyExc_TypeError, "launch: %s must be a tuple of 3 ints", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < 3; i++) {
        unsigned long v = PyLong_AsUnsignedLong(PyTuple_GetItem(t, i));
        if (v == (unsigned long)-1 && PyErr_Occurred()) return -1;
        if (v > UINT_MAX) {
            PyErr_Format(PyExc_OverflowError, "launch: %s[%zd] does not fit an unsigned int", what, i);
            return -1;
        }
        out[i] = (unsigned int)v;
    }
    return 0;
}

/* Launch attributes as bytes (a whole number of 72-byte CUlaunchAttribute records) or None. */
static int read_attrs(PyObject *attrs, LaunchDims *d) {
    d->attrs = NULL, d->nattrs = 0;
    if (attrs == Py_None) return 0;
    if (!PyBytes_Check(attrs) || PyBytes_Size(attrs) % 72 != 0) {
        PyErr_SetString(PyExc_TypeError, "launch: attrs must be None or bytes of CUlaunchAttribute records");
        return -1;
    }
    d->attrs = PyBytes_AsString(attrs);
    d->nattrs = (unsigned int)(PyBytes_Size(attrs) / 72);
    return 0;
}

/* launch(function, grid, block, shared_mem, stream, params, attrs=None) -> CUresult as an int.
 * function, stream and params are addresses (ints); grid and block are 3-tuples. The
 * prepared launches and the general path launch through this. */
PyObject *py_launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    LaunchDims d;
    if (nargs != 6 && nargs != 7) {
        PyErr_Format(PyExc_TypeError, "launch() takes 6 or 7 arguments (%zd given)", nargs);
        return NULL;
    }
    void *f = PyLong_AsVoidPtr(args[0]);
    if (f == NULL && PyErr_Occurred()) return NULL;
    if (dims3(args[1], "grid", d.grid) < 0 || dims3(args[2], "block", d.block) < 0) return NULL;
    unsigned long shared_mem = PyLong_AsUnsignedLong(args[3]);
    if (shared_mem == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    if (shared_mem > UINT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "launch: shared_mem does not fit an unsigned int");
        return NULL;
    }
    d.smem = (unsigned int)shared_mem;
    d.stream = PyLong_AsVoidPtr(args[4]);
    if (d.stream == NULL && PyErr_Occurred()) return NULL;
    void **params = (void **)PyLong_AsVoidPtr(args[5]);
    if (params == NULL && PyErr_Occurred()) return NULL;
    if (read_attrs(nargs == 7 ? args[6] : Py_None, &d) < 0) return NULL;
    return PyLong_FromLong(launch_ex(f, &d, params));
}

/* The latest launches, newest last, named if a later CUDA call reports a fault: a ring of
 * RECENT (kernel, grid, block, smem) records, shared by every thread and stream (a fault is
 * reported on the next synchronising call of any of them). */
#define RECENT 8
static PyObject *recent_name[RECENT];
static unsigned int recent_dims[RECENT][7];
static unsigned long long recent_count = 0;

void note_launch_c(PyObject *name, const LaunchDims *d) {
    int slot = (int)(recent_count % RECENT);
    Py_INCREF(name);
    SET(recent_name[slot], name);
    for (int i = 0; i < 3; i++) recent_dims[slot][i] = d->grid[i], recent_dims[slot][3 + i] = d->block[i];
    recent_dims[slot][6] = d->smem;
    recent_count++;
}

static PyObject *launch_record(unsigned long long n) {
    int slot = (int)(n % RECENT);
    unsigned int *d = recent_dims[slot];
    return Py_BuildValue("(O(III)(III)I)", recent_name[slot], d[0], d[1], d[2], d[3], d[4], d[5], d[6]);
}

/* note_launch(kernel, grid, block, shared_mem): what the Python launch paths record */
PyObject *py_note_launch(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *name;
    LaunchDims d;
    unsigned int *g = d.grid, *b = d.block;
    if (!PyArg_ParseTuple(args, "O(III)(III)I", &name, &g[0], &g[1], &g[2], &b[0], &b[1], &b[2], &d.smem)) return NULL;
    note_launch_c(name, &d);
    Py_RETURN_NONE;
}

PyObject *py_last_launch(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    if (recent_count == 0) Py_RETURN_NONE;
    return launch_record(recent_count - 1);
}

/* launch_count() -> how many launches were recorded in this process */
PyObject *py_launch_count(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    return PyLong_FromUnsignedLongLong(recent_count);
}

/* recent_launches() -> the last launches recorded, newest first (at most RECENT) */
PyObject *py_recent_launches(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    unsigned long long have = recent_count < RECENT ? recent_count : RECENT;
    PyObject *out = PyList_New((Py_ssize_t)have);
    if (out == NULL) return NULL;
    for (unsigned long long i = 0; i < have; i++) {
        PyObject *r = launch_record(recent_count - 1 - i);
        if (r == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SetItem(out, (Py_ssize_t)i, r); /* steals r */
    }
    return out;
}
