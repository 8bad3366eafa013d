/* cuforge._claunch: checked launches in C.
 *
 * On an H200 host, cuda.bindings' Python wrapper for cuLaunchKernel costs about 1.4 us above
 * the C call, and checking a call's arguments in generated Python about as much again: a
 * checked call sat at 1.5-1.9x a cuda.core launch. This module holds
 *   - launch(): the driver call alone (prepared launches and the general path use it);
 *   - Launcher: each kernel's checks, packing and driver call (the C twin of _fastpath's
 *     generated function);
 *   - KernelBase: the base of cuforge.Kernel, whose tp_call hands calls to the Launcher with
 *     no Python frame in between.
 * The driver's cuLaunchKernel entry point is found by _cuda.py with cuGetProcAddress, so the
 * legacy or per-thread default stream follows cuda.bindings' setting; it is called with the
 * GIL released, as cuda.core and CuPy do from Cython.
 *
 * Built against the stable ABI (CPython 3.10+), so one binary serves every version. It is
 * optional: without it cuforge checks arguments in generated Python and launches through
 * cuda.bindings.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef int (*cu_launch_kernel)(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int shared_mem, void *stream,
                                void **params, void **extra);

static cu_launch_kernel entry = NULL;

enum { CUDA_ERROR_NOT_INITIALIZED = 3 };

static PyObject *set_entry(PyObject *module, PyObject *address) {
    (void)module;
    void *p = PyLong_AsVoidPtr(address);
    if (p == NULL && PyErr_Occurred()) return NULL;
    entry = (cu_launch_kernel)p;
    Py_RETURN_NONE;
}

/* Three unsigned ints from a 3-tuple of ints; -1 with an exception set otherwise. */
static int dims3(PyObject *t, const char *what, unsigned int out[3]) {
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

/* launch(function, grid, block, shared_mem, stream, params) -> CUresult as an int.
 * function, stream and params are addresses (ints); grid and block are 3-tuples. */
static PyObject *launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    unsigned int grid[3], block[3];
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "launch() takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    void *f = PyLong_AsVoidPtr(args[0]);
    if (f == NULL && PyErr_Occurred()) return NULL;
    if (dims3(args[1], "grid", grid) < 0 || dims3(args[2], "block", block) < 0) return NULL;
    unsigned long shared_mem = PyLong_AsUnsignedLong(args[3]);
    if (shared_mem == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    if (shared_mem > UINT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "launch: shared_mem does not fit an unsigned int");
        return NULL;
    }
    void *stream = PyLong_AsVoidPtr(args[4]);
    if (stream == NULL && PyErr_Occurred()) return NULL;
    void **params = (void **)PyLong_AsVoidPtr(args[5]);
    if (params == NULL && PyErr_Occurred()) return NULL;
    if (entry == NULL) return PyLong_FromLong(CUDA_ERROR_NOT_INITIALIZED);
    int err;
    /* cuLaunchKernel blocks while the launch queue is full: let other threads run meanwhile. */
    Py_BEGIN_ALLOW_THREADS
    err = entry(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], (unsigned int)shared_mem, stream,
                params, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(err);
}

/* ------------------------------------------------------------------ checked launches
 *
 * A Launcher is the C twin of the launch function _fastpath generates in Python: the same
 * checks, in the same order, for the same inputs (exact Python int/float/bool scalars in
 * range; CuPy arrays, PyTorch tensors and cuforge DeviceArrays of the exact dtype and rank,
 * C-contiguous, on the launching device; a memoised grid/block or the kernel's default rule).
 * It returns True after launching, or False, with no CUDA call made, for anything else: the
 * general path then checks the call again and raises its usual errors. Parameters are packed
 * into a buffer on the C stack, so threads never share one.
 */

/* Replace a reference held in *dst (Py_XSETREF is not in the stable ABI). */
#define SET(dst, value)             \
    do {                            \
        PyObject *old_ = (PyObject *)(dst); \
        (dst) = (value);            \
        Py_XDECREF(old_);           \
    } while (0)

#define MAX_PARAM_BYTES 4096
#define MAX_PARAMS 256

enum { P_INT = 'i', P_UINT = 'u', P_F32 = 'f', P_F64 = 'd', P_BOOL = 'b', P_ARRAY = 'a' };

typedef struct {
    int kind, size, offset, ndim; /* ndim: arrays only, -1 for any rank */
    long long lo, hi;             /* P_INT range */
    unsigned long long uhi;       /* P_UINT range (and P_INT's hi, as passed in) */
    double limit;                 /* P_F32: largest magnitude (float64 takes every float) */
    PyObject *dtype;              /* P_ARRAY: the cuforge DType expected */
    PyObject *seen;               /* P_ARRAY: the library's dtype object last found to be it */
} Spec;

#if defined(_MSC_VER)
#define THREAD_LOCAL __declspec(thread)
#else
#define THREAD_LOCAL _Thread_local
#endif

/* The device this thread launches on (-1: none made current yet), mirroring _cuda._tls.device. */
static THREAD_LOCAL long long thread_device = -1;

/* The latest launch, named if a later CUDA call reports a fault: (kernel, grid, block, smem). */
static PyObject *last_name;
static unsigned int last_dims[7];

static void note(PyObject *name, const unsigned int grid[3], const unsigned int block[3], unsigned int smem) {
    Py_INCREF(name);
    SET(last_name, name);
    for (int i = 0; i < 3; i++) last_dims[i] = grid[i], last_dims[3 + i] = block[i];
    last_dims[6] = smem;
}

/* Shared by every Launcher, set once from Python by configure() and set_array_types(). */
static PyObject *cuda_module, *by_numpy, *by_torch, *own_type, *cupy_type, *cupy_stream, *torch_type,
    *torch_stream;
static PyObject *launcher_type, *zero, *s_launch_general, *option_names[4];
static PyObject *s_dtype, *s_c_contiguous, *s_ndim, *s_data, *s_ptr, *s_device_id, *s_size, *s_is_contiguous,
    *s_data_ptr, *s_get_device, *s_numel, *s_shape, *s_current_device, *s_id;

typedef struct {
    PyObject_HEAD
    int nparams;
    Spec spec[MAX_PARAMS];
    PyObject *name, *by_device, *dims, *grid_key, *block_key, *stream_fn, *on_error, *py_fast;
    unsigned int block_default[3];
    long long function_device; /* the device of function, the kernel's handle there (-1: none yet) */
    void *function;
    int grid_rule; /* -2: a grid function (decline when grid is None), -1: largest array, k: parameter k */
    unsigned long long grid_max;
    PyObject *last_grid, *last_block;          /* the last grid= and block= arguments seen */
    unsigned int last_grid_dims[3], last_block_dims[3]; /* and their checked values */
} Launcher;

/* The checked dims for a grid= or block= argument: 1 found, 0 decline. The last argument
 * seen is found by identity; others through the values _launch.dims memoised for them. */
static int lookup_dims(Launcher *self, PyObject *arg, PyObject *key, PyObject **last, unsigned int cached[3],
                       unsigned int out[3]) {
    if (arg != *last) {
        PyObject *k = PyTuple_Pack(2, arg, key);
        if (k == NULL) return 0;
        PyObject *found = PyDict_GetItemWithError(self->dims, k); /* borrowed; fails for unhashable args */
        Py_DECREF(k);
        if (found == NULL || dims3(found, "grid or block", cached) < 0) {
            PyErr_Clear();
            SET(*last, NULL); /* cached[] no longer holds *last's dims */
            return 0;
        }
        Py_INCREF(arg);
        SET(*last, arg);
    }
    out[0] = cached[0], out[1] = cached[1], out[2] = cached[2];
    return 1;
}

/* Pointers, sizes and ordinals are read with PyLong_AsSsize_t: PyLong_AsLongLong takes a slow
 * byte-array route for every value past 2**30 (each pointer). */
static PyObject *attr_int(PyObject *o, PyObject *name, long long *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return NULL;
    *out = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? NULL : Py_None;
}

static PyObject *call_int(PyObject *o, PyObject *name, long long *out) {
    PyObject *m = PyObject_GetAttr(o, name);
    if (m == NULL) return NULL;
    PyObject *v = PyObject_CallNoArgs(m);
    Py_DECREF(m);
    if (v == NULL) return NULL;
    *out = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? NULL : Py_None;
}

/* Whether mapping[key] is expected (a dtype check through _BY_NUMPY or the torch table). */
static int dtype_is(PyObject *mapping, PyObject *obj, Spec *sp) {
    PyObject *dt = PyObject_GetAttr(obj, s_dtype);
    if (dt == NULL) return -1;
    if (dt == sp->seen) { /* NumPy's and PyTorch's builtin dtypes are singletons */
        Py_DECREF(dt);
        return 1;
    }
    PyObject *found = mapping == NULL ? dt : PyDict_GetItemWithError(mapping, dt);
    int ok = found == sp->dtype;
    if (ok)
        SET(sp->seen, dt); /* takes dt's reference */
    else
        Py_DECREF(dt);
    return (found == NULL && PyErr_Occurred()) ? -1 : ok;
}

/* One array argument: 1 accepted (ptr, device, size, origin set), 0 declined, -1 error. */
static int check_array(Spec *sp, PyObject *v, void **ptr, long long *device, long long *size, int *origin) {
    PyTypeObject *t = Py_TYPE(v);
    long long ndim, p;
    if ((PyObject *)t == cupy_type) {
        int ok = dtype_is(by_numpy, v, sp);
        if (ok <= 0) return ok;
        PyObject *c = PyObject_GetAttr(v, s_c_contiguous);
        if (c == NULL) return -1;
        ok = PyObject_IsTrue(c);
        Py_DECREF(c);
        if (ok <= 0) return ok;
        if (sp->ndim >= 0) {
            if (attr_int(v, s_ndim, &ndim) == NULL) return -1;
            if (ndim != sp->ndim) return 0;
        }
        PyObject *mem = PyObject_GetAttr(v, s_data);
        if (mem == NULL) return -1;
        PyObject *r = attr_int(mem, s_ptr, &p);
        if (r != NULL) r = attr_int(mem, s_device_id, device);
        Py_DECREF(mem);
        if (r == NULL || attr_int(v, s_size, size) == NULL) return -1;
        if (*origin == 0) *origin = 1;
    } else if ((PyObject *)t == own_type) {
        int ok = dtype_is(NULL, v, sp);
        if (ok <= 0) return ok;
        if (sp->ndim >= 0) {
            PyObject *shape = PyObject_GetAttr(v, s_shape);
            if (shape == NULL) return -1;
            ndim = PyObject_Size(shape);
            Py_DECREF(shape);
            if (ndim != sp->ndim) return ndim < 0 ? -1 : 0;
        }
        if (attr_int(v, s_ptr, &p) == NULL || attr_int(v, s_device_id, device) == NULL || attr_int(v, s_size, size) == NULL)
            return -1;
    } else if ((PyObject *)t == torch_type) {
        int ok = dtype_is(by_torch, v, sp);
        if (ok <= 0) return ok;
        PyObject *m = PyObject_GetAttr(v, s_is_contiguous);
        if (m == NULL) return -1;
        PyObject *c = PyObject_CallNoArgs(m);
        Py_DECREF(m);
        if (c == NULL) return -1;
        ok = PyObject_IsTrue(c);
        Py_DECREF(c);
        if (ok <= 0) return ok;
        if (sp->ndim >= 0) {
            if (attr_int(v, s_ndim, &ndim) == NULL) return -1;
            if (ndim != sp->ndim) return 0;
        }
        if (call_int(v, s_data_ptr, &p) == NULL || call_int(v, s_get_device, device) == NULL ||
            call_int(v, s_numel, size) == NULL)
            return -1;
        if (*origin == 0) *origin = 2;
    } else {
        return 0;
    }
    *ptr = (void *)(intptr_t)p;
    return 1;
}

/* One scalar argument packed at dst: 1 accepted, 0 declined. */
static int pack_scalar(const Spec *sp, PyObject *v, char *dst, long long *as_int) {
    if (sp->kind == P_INT || sp->kind == P_UINT) {
        if (!PyLong_CheckExact(v)) return 0;
        long long x;
        if (sp->kind == P_INT) {
            x = PyLong_AsLongLong(v);
            if ((x == -1 && PyErr_Occurred()) || x < sp->lo || x > sp->hi) return 0;
        } else {
            unsigned long long u = PyLong_AsUnsignedLongLong(v);
            if ((u == (unsigned long long)-1 && PyErr_Occurred()) || u > sp->uhi) return 0;
            x = (long long)u;
        }
        *as_int = x;
        switch (sp->size) {
        case 1: *(int8_t *)dst = (int8_t)x; break;
        case 2: *(int16_t *)dst = (int16_t)x; break;
        case 4: *(int32_t *)dst = (int32_t)x; break;
        default: *(int64_t *)dst = (int64_t)x; break;
        }
        return 1;
    }
    if (sp->kind == P_BOOL) {
        if (v != Py_True && v != Py_False) return 0;
        *(unsigned char *)dst = v == Py_True;
        return 1;
    }
    if (!PyFloat_CheckExact(v)) return 0;
    double d = PyFloat_AsDouble(v);
    if (sp->kind == P_F32 && !(d >= -sp->limit && d <= sp->limit)) return 0; /* NaN declines, as in Python */
    if (sp->kind == P_F32)
        *(float *)dst = (float)d;
    else
        *(double *)dst = d;
    return 1;
}

/* Check and launch: Py_True launched, Py_False declined (no CUDA call made), NULL raised.
 * argv holds the kernel's nargs positional arguments. */
static PyObject *launcher_run(Launcher *self, PyObject *const *argv, Py_ssize_t nargs, PyObject *grid, PyObject *block,
                              PyObject *shared, PyObject *stream) {
    if (entry == NULL) { /* no device yet, or CUFORGE_LAUNCHER=bindings: the Python twin */
        PyObject *argt = PyTuple_New(nargs);
        if (argt == NULL) return NULL;
        for (Py_ssize_t i = 0; i < nargs; i++) {
            Py_INCREF(argv[i]);
            PyTuple_SetItem(argt, i, argv[i]);
        }
        PyObject *r = PyObject_CallFunctionObjArgs(self->py_fast, argt, grid, block, shared, stream, NULL);
        Py_DECREF(argt);
        return r;
    }
    if (nargs != self->nparams) Py_RETURN_FALSE;

    unsigned long long buf[MAX_PARAM_BYTES / 8];
    void *ptrs[MAX_PARAMS];
    long long devices[MAX_PARAMS], sizes[MAX_PARAMS], ints[MAX_PARAMS];
    int origin = 0, narrays = 0;
    for (int i = 0; i < self->nparams; i++) { /* scalars first, as the Python twin does */
        const Spec *sp = &self->spec[i];
        ptrs[i] = (char *)buf + sp->offset;
        if (sp->kind != P_ARRAY && !pack_scalar(sp, argv[i], ptrs[i], &ints[i])) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
    }
    for (int i = 0; i < self->nparams; i++) {
        Spec *sp = &self->spec[i];
        if (sp->kind != P_ARRAY) continue;
        void *p;
        int ok = check_array(sp, argv[i], &p, &devices[narrays], &sizes[i], &origin);
        if (ok <= 0) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
        *(void **)ptrs[i] = p;
        narrays++;
    }
    if (!PyLong_CheckExact(shared)) Py_RETURN_FALSE;
    unsigned long smem = PyLong_AsUnsignedLong(shared);
    if ((smem == (unsigned long)-1 && PyErr_Occurred()) || smem > UINT_MAX) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    void *sh = NULL;
    int have_stream = stream != Py_None;
    if (have_stream) {
        PyObject *h = PyLong_CheckExact(stream) ? (Py_INCREF(stream), stream)
                                                : PyObject_CallFunctionObjArgs(self->stream_fn, stream, self->name, NULL);
        if (h == NULL) return NULL; /* not a stream: stream_handle's ArgumentTypeError */
        sh = PyLong_AsVoidPtr(h);
        Py_DECREF(h);
        if (sh == NULL && PyErr_Occurred()) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
    }
    /* Checks done: from here on CUDA is used (current_device() starts it in a new thread). */
    long long did = thread_device;
    if (did < 0) { /* this thread's first launch: make the device current (NoDeviceError if none) */
        PyObject *dev = PyObject_CallMethodObjArgs(cuda_module, s_current_device, NULL);
        if (dev == NULL) return NULL;
        PyObject *r = attr_int(dev, s_id, &did);
        Py_DECREF(dev);
        if (r == NULL) return NULL;
    }
    for (int i = 0; i < narrays; i++)
        if (devices[i] != did) Py_RETURN_FALSE;
    if (did != self->function_device) { /* kernel.py never changes a _by_device entry once made */
        PyObject *key = PyLong_FromLongLong(did);
        if (key == NULL) return NULL;
        PyObject *found = PyDict_GetItemWithError(self->by_device, key); /* borrowed */
        Py_DECREF(key);
        if (found == NULL) {
            if (PyErr_Occurred()) return NULL;
            Py_RETURN_FALSE; /* first launch on this device: the general path compiles and loads */
        }
        void *f = PyLong_AsVoidPtr(PyTuple_GetItem(found, 0));
        if (f == NULL && PyErr_Occurred()) return NULL;
        self->function = f, self->function_device = did;
    }
    void *function = self->function;

    unsigned int g[3], b[3];
    if (block == Py_None)
        b[0] = self->block_default[0], b[1] = self->block_default[1], b[2] = self->block_default[2];
    else if (!lookup_dims(self, block, self->block_key, &self->last_block, self->last_block_dims, b))
        Py_RETURN_FALSE;
    if (grid == Py_None) {
        long long count = -1;
        if (self->grid_rule == -2) Py_RETURN_FALSE; /* a grid function: the general path calls it */
        if (self->grid_rule == -1) {
            for (int i = 0; i < self->nparams; i++)
                if (self->spec[i].kind == P_ARRAY && sizes[i] > count) count = sizes[i];
        } else {
            int k = self->grid_rule;
            count = self->spec[k].kind == P_ARRAY ? sizes[k] : ints[k];
        }
        if (count <= 0) Py_RETURN_FALSE;
        unsigned long long n = ((unsigned long long)count + b[0] - 1) / b[0];
        if (n > self->grid_max) Py_RETURN_FALSE;
        g[0] = (unsigned int)n, g[1] = g[2] = 1;
    } else if (!lookup_dims(self, grid, self->grid_key, &self->last_grid, self->last_grid_dims, g)) {
        Py_RETURN_FALSE;
    }
    if (!have_stream && origin != 0) { /* the arrays' library's current stream */
        PyObject *h;
        if (origin == 1) {
            PyObject *s = PyObject_CallNoArgs(cupy_stream);
            h = s == NULL ? NULL : PyObject_GetAttr(s, s_ptr);
            Py_XDECREF(s);
        } else {
            PyObject *d = PyLong_FromLongLong(did);
            h = d == NULL ? NULL : PyObject_CallFunctionObjArgs(torch_stream, d, NULL);
            Py_XDECREF(d);
        }
        if (h != NULL) {
            sh = PyLong_AsVoidPtr(h);
            Py_DECREF(h);
        }
        if (PyErr_Occurred()) return NULL;
    }
    note(self->name, g, b, (unsigned int)smem);
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = entry(function, g[0], g[1], g[2], b[0], b[1], b[2], (unsigned int)smem, sh, ptrs, NULL);
    Py_END_ALLOW_THREADS
    if (err) {
        PyObject *res = PyObject_CallFunction(self->on_error, "i(III)(III)O", err, g[0], g[1], g[2], b[0], b[1], b[2], shared);
        Py_XDECREF(res);
        return NULL; /* on_error raises LaunchError */
    }
    Py_RETURN_TRUE;
}

/* launcher(args, grid, block, shared_mem, stream), as the Python twin is called */
static PyObject *launcher_call(Launcher *self, PyObject *args, PyObject *kwargs) {
    PyObject *argv[MAX_PARAMS];
    if (kwargs != NULL || PyTuple_Size(args) != 5) {
        PyErr_SetString(PyExc_TypeError, "Launcher(args, grid, block, shared_mem, stream)");
        return NULL;
    }
    PyObject *argt = PyTuple_GetItem(args, 0);
    if (!PyTuple_Check(argt) || PyTuple_Size(argt) > MAX_PARAMS) Py_RETURN_FALSE;
    Py_ssize_t n = PyTuple_Size(argt);
    for (Py_ssize_t i = 0; i < n; i++) argv[i] = PyTuple_GetItem(argt, i);
    return launcher_run(self, argv, n, PyTuple_GetItem(args, 1), PyTuple_GetItem(args, 2), PyTuple_GetItem(args, 3),
                        PyTuple_GetItem(args, 4));
}

/* The C part of a cuforge.Kernel: its launch function (_fast, set by kernel.py), read here
 * without a dict lookup. */
typedef struct {
    PyObject_HEAD
    PyObject *fast;
} KernelBase;

/* Calling a Kernel: kernel(*args, grid=None, block=None, shared_mem=0, stream=None, **kwargs).
 * Kernel derives from KernelBase, whose tp_call this is: CPython calls it directly, with no
 * Python frame or method lookup between the call and the checks. */
static PyObject *kernel_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *opt[4] = {Py_None, Py_None, zero, Py_None}; /* grid, block, shared_mem, stream */
    PyObject *named = NULL;                                /* kernel arguments passed by name */
    PyObject *argv[MAX_PARAMS];
    Py_ssize_t nargs = PyTuple_Size(args), pos = 0;
    PyObject *k, *v;
    while (kwargs != NULL && PyDict_Next(kwargs, &pos, &k, &v)) {
        int j = 0;
        while (j < 4 && k != option_names[j] && PyUnicode_Compare(k, option_names[j]) != 0) j++;
        if (j < 4) {
            opt[j] = v;
            continue;
        }
        if (named == NULL && (named = PyDict_New()) == NULL) return NULL;
        if (PyDict_SetItem(named, k, v) < 0) {
            Py_DECREF(named);
            return NULL;
        }
    }
    if (named == NULL) {
        PyObject *fast = ((KernelBase *)self)->fast, *r;
        if (fast == NULL) {
            PyErr_SetString(PyExc_TypeError, "a cuforge.Kernel was called before it was initialised");
            return NULL;
        }
        Py_INCREF(fast); /* the call below may replace self._fast */
        if ((PyObject *)Py_TYPE(fast) == launcher_type && nargs <= MAX_PARAMS) {
            for (Py_ssize_t i = 0; i < nargs; i++) argv[i] = PyTuple_GetItem(args, i);
            r = launcher_run((Launcher *)fast, argv, nargs, opt[0], opt[1], opt[2], opt[3]);
        } else { /* the Python twin (no C twin for this signature), or the general path only */
            r = PyObject_CallFunctionObjArgs(fast, args, opt[0], opt[1], opt[2], opt[3], NULL);
        }
        Py_DECREF(fast);
        if (r == NULL) return NULL;
        int launched = r == Py_True;
        Py_DECREF(r);
        if (launched) Py_RETURN_NONE;
        if ((named = PyDict_New()) == NULL) return NULL;
    }
    /* Declined, or arguments by name: the general path checks again and explains what is wrong. */
    PyObject *r = PyObject_CallMethodObjArgs(self, s_launch_general, args, named, opt[0], opt[1], opt[2], opt[3], NULL);
    Py_DECREF(named);
    return r;
}

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
    {"_fast", T_OBJECT, offsetof(KernelBase, fast), 0, "the kernel's launch function (see _fastpath.py)"},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot kernel_base_slots[] = {
    {Py_tp_call, kernel_call},
    {Py_tp_members, kernel_base_members},
    {Py_tp_traverse, kernel_base_traverse},
    {Py_tp_clear, kernel_base_clear},
    {Py_tp_dealloc, kernel_base_dealloc},
    {Py_tp_doc, "Calls a cuforge.Kernel from C (see _claunch.c)."},
    {0, NULL},
};

static PyType_Spec kernel_base_spec = {
    "cuforge._claunch.KernelBase", sizeof(KernelBase), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    kernel_base_slots,
};

/* The Python objects a Launcher holds, for traverse and clear alike. */
#define LAUNCHER_OBJECTS(X) \
    X(name) X(by_device) X(dims) X(grid_key) X(block_key) X(stream_fn) X(on_error) X(py_fast) X(last_grid) X(last_block)

static int launcher_traverse(Launcher *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self)); /* instances of heap types hold their type */
#define VISIT(field) Py_VISIT(self->field);
    LAUNCHER_OBJECTS(VISIT)
#undef VISIT
    for (int i = 0; i < self->nparams; i++) {
        Py_VISIT(self->spec[i].dtype);
        Py_VISIT(self->spec[i].seen);
    }
    return 0;
}

static int launcher_clear(Launcher *self) {
#define CLEAR(field) Py_CLEAR(self->field);
    LAUNCHER_OBJECTS(CLEAR)
#undef CLEAR
    for (int i = 0; i < self->nparams; i++) {
        Py_CLEAR(self->spec[i].dtype);
        Py_CLEAR(self->spec[i].seen);
    }
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

/* Launcher(specs, name, by_device, dims, grid_key, block_key, block_default, grid_rule, grid_max,
 *          stream_fn, on_error, py_fast); specs: one tuple per parameter,
 *          (kind, size, offset, ndim, lo, hi, limit, dtype) with kind one of "iufdba". */
static PyObject *launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    (void)kwargs;
    PyObject *specs, *name, *by_device, *dims, *grid_key, *block_key, *block_default, *stream_fn, *on_error, *py_fast;
    int grid_rule;
    unsigned long long grid_max;
    if (!PyArg_ParseTuple(args, "OOOOOOOiKOOO", &specs, &name, &by_device, &dims, &grid_key, &block_key,
                          &block_default, &grid_rule, &grid_max, &stream_fn, &on_error, &py_fast))
        return NULL;
    Py_ssize_t n = PyObject_Size(specs);
    if (n < 0) return NULL;
    if (n > MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "Launcher: too many parameters for the C launcher");
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    Launcher *self = (Launcher *)alloc(type, 0);
    if (self == NULL) return NULL;
    self->nparams = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Spec *sp = &self->spec[i];
        PyObject *item = PySequence_GetItem(specs, i);
        if (item == NULL) goto fail;
        const char *kind;
        int ok = PyArg_ParseTuple(item, "siiiLKdO", &kind, &sp->size, &sp->offset, &sp->ndim, &sp->lo, &sp->uhi,
                                  &sp->limit, &sp->dtype);
        Py_DECREF(item);
        if (!ok) goto fail;
        sp->kind = kind[0];
        sp->hi = (long long)sp->uhi;
        Py_INCREF(sp->dtype);
        self->nparams = (int)i + 1;
        if (sp->offset < 0 || sp->offset + sp->size > MAX_PARAM_BYTES || sp->offset % sp->size != 0) {
            PyErr_SetString(PyExc_ValueError, "Launcher: a parameter lies outside the C launcher's buffer");
            goto fail;
        }
    }
#define KEEP(field) (Py_INCREF(field), self->field = field)
    KEEP(name), KEEP(by_device), KEEP(dims), KEEP(grid_key), KEEP(block_key);
    KEEP(stream_fn), KEEP(on_error), KEEP(py_fast);
#undef KEEP
    self->grid_rule = grid_rule;
    self->grid_max = grid_max;
    self->last_grid = self->last_block = NULL;
    self->function_device = -1;
    if (dims3(block_default, "block_default", self->block_default) < 0) goto fail;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static PyMemberDef launcher_members[] = {
    {"python", T_OBJECT, offsetof(Launcher, py_fast), READONLY, "the Python launch function this one mirrors"},
    {"kernel", T_OBJECT, offsetof(Launcher, name), READONLY, "the kernel's name"},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot launcher_slots[] = {
    {Py_tp_members, launcher_members},
    {Py_tp_new, launcher_new},
    {Py_tp_call, launcher_call},
    {Py_tp_traverse, launcher_traverse},
    {Py_tp_clear, launcher_clear},
    {Py_tp_dealloc, launcher_dealloc},
    {Py_tp_doc, "A kernel's checked launch in C (see _fastpath.py): call(args, grid, block, shared_mem, stream)."},
    {0, NULL},
};

static PyType_Spec launcher_spec = {
    "cuforge._claunch.Launcher", sizeof(Launcher), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, launcher_slots,
};

static PyObject *set_thread_device(PyObject *module, PyObject *arg) {
    (void)module;
    long long d = PyLong_AsLongLong(arg);
    if (d == -1 && PyErr_Occurred()) return NULL;
    thread_device = d;
    Py_RETURN_NONE;
}

/* note_launch(kernel, grid, block, shared_mem): what the Python launch paths record */
static PyObject *note_launch(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *name;
    unsigned int g[3], b[3], smem;
    if (!PyArg_ParseTuple(args, "O(III)(III)I", &name, &g[0], &g[1], &g[2], &b[0], &b[1], &b[2], &smem)) return NULL;
    note(name, g, b, smem);
    Py_RETURN_NONE;
}

static PyObject *last_launch(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    if (last_name == NULL) Py_RETURN_NONE;
    unsigned int *d = last_dims;
    return Py_BuildValue("(O(III)(III)I)", last_name, d[0], d[1], d[2], d[3], d[4], d[5], d[6]);
}

/* configure(cuda_module, by_numpy, by_torch, own_type) */
static PyObject *configure(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *a, *c, *d, *e;
    if (!PyArg_ParseTuple(args, "OOOO", &a, &c, &d, &e)) return NULL;
    Py_INCREF(a), Py_INCREF(c), Py_INCREF(d), Py_INCREF(e);
    SET(cuda_module, a);
    SET(by_numpy, c);
    SET(by_torch, d);
    SET(own_type, e);
    Py_RETURN_NONE;
}

/* set_array_types(cupy_type, cupy_stream, torch_type, torch_stream): None for a library not met yet */
static PyObject *set_array_types(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *a, *b, *c, *d;
    if (!PyArg_ParseTuple(args, "OOOO", &a, &b, &c, &d)) return NULL;
    Py_INCREF(a), Py_INCREF(b), Py_INCREF(c), Py_INCREF(d);
    SET(cupy_type, a);
    SET(cupy_stream, b);
    SET(torch_type, c);
    SET(torch_stream, d);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"set_entry", set_entry, METH_O, "set_entry(address): the cuLaunchKernel entry point to call."},
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "launch(function, grid, block, shared_mem, stream, params) -> CUresult as an int."},
    {"set_thread_device", set_thread_device, METH_O, "set_thread_device(ordinal): this thread's launch device"},
    {"note_launch", note_launch, METH_VARARGS, "note_launch(kernel, grid, block, shared_mem): record a launch"},
    {"last_launch", last_launch, METH_NOARGS, "last_launch() -> (kernel, grid, block, shared_mem) or None"},
    {"configure", configure, METH_VARARGS, "configure(cuda_module, by_numpy, by_torch, own_type)"},
    {"set_array_types", set_array_types, METH_VARARGS, "set_array_types(cupy_type, cupy_stream, torch_type, torch_stream)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "cuforge._claunch", "cuLaunchKernel called from C (see _cuda.py and _fastpath.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

#define INTERN(var, text) \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC PyInit__claunch(void) {
    INTERN(s_launch_general, "_launch_general");
    INTERN(option_names[0], "grid");
    INTERN(option_names[1], "block");
    INTERN(option_names[2], "shared_mem");
    INTERN(option_names[3], "stream");
    if ((zero = PyLong_FromLong(0)) == NULL) return NULL;
    INTERN(s_dtype, "dtype");
    INTERN(s_c_contiguous, "_c_contiguous");
    INTERN(s_ndim, "ndim");
    INTERN(s_data, "data");
    INTERN(s_ptr, "ptr");
    INTERN(s_device_id, "device_id");
    INTERN(s_size, "size");
    INTERN(s_is_contiguous, "is_contiguous");
    INTERN(s_data_ptr, "data_ptr");
    INTERN(s_get_device, "get_device");
    INTERN(s_numel, "numel");
    INTERN(s_shape, "shape");
    INTERN(s_current_device, "current_device");
    INTERN(s_id, "id");
    Py_INCREF(Py_None), Py_INCREF(Py_None), Py_INCREF(Py_None), Py_INCREF(Py_None);
    cupy_type = cupy_stream = torch_type = torch_stream = Py_None;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyObject *t = PyType_FromSpec(&launcher_spec);
    if (t == NULL || PyModule_AddObject(m, "Launcher", t) < 0) {
        Py_XDECREF(t);
        Py_DECREF(m);
        return NULL;
    }
    launcher_type = t;
    Py_INCREF(t); /* kept: the module's reference went to its dict */
    PyObject *base = PyType_FromSpec(&kernel_base_spec);
    if (base == NULL || PyModule_AddObject(m, "KernelBase", base) < 0) {
        Py_XDECREF(base);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
