/* Array arguments as the C launcher reads them: CuPy arrays, PyTorch tensors and cuforge
 * DeviceArrays directly (the types _runtime/arrays.py publishes when it first meets them), every
 * other array through _arrays.array_arg, whose ArrayArg record this reads by field name.
 * The acceptance rule is the Python checks' (_checks.array_checker): the exact dtype, the
 * declared rank, C-contiguous, writable where the kernel writes, not host memory other than
 * NumPy's (which the general path stages).
 */
#include "claunch.h"

/* Set once by configure() and set_array_types(). */
static PyObject *by_numpy, *by_torch, *own_type, *array_arg_fn;
static PyObject *cupy_type, *cupy_stream, *torch_type, *torch_stream;
/* torch.Tensor's is_contiguous, data_ptr, get_device and numel, called with the tensor: no
 * per-call method lookup on torch.Tensor's long MRO */
static PyObject *torch_is_contiguous, *torch_data_ptr, *torch_get_device, *torch_numel;
static PyObject *s_dtype, *s_c_contiguous, *s_ndim, *s_data, *s_ptr, *s_device_id, *s_size, *s_is_contiguous,
    *s_data_ptr, *s_get_device, *s_numel, *s_shape, *s_contiguous, *s_device, *s_readonly, *s_origin, *s_cupy,
    *s_torch, *s_numpy;

int configure_arrays(PyObject *numpy_dtypes, PyObject *torch_dtypes, PyObject *array_arg) {
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
    INTERN(s_contiguous, "contiguous");
    INTERN(s_device, "device");
    INTERN(s_readonly, "readonly");
    INTERN(s_origin, "origin");
    INTERN(s_cupy, "cupy");
    INTERN(s_torch, "torch");
    INTERN(s_numpy, "numpy");
    keep(&by_numpy, numpy_dtypes), keep(&by_torch, torch_dtypes), keep(&array_arg_fn, array_arg);
    return 0;
}

/* set_array_types(cupy_type, cupy_stream, torch_type, torch_stream, own_type): None where not met
 * yet (own_type: cuforge.DeviceArray, whose module is imported on its first use) */
PyObject *py_set_array_types(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *a, *b, *c, *d, *e;
    if (!PyArg_ParseTuple(args, "OOOOO", &a, &b, &c, &d, &e)) return NULL;
    keep(&cupy_type, a), keep(&cupy_stream, b), keep(&torch_type, c), keep(&torch_stream, d), keep(&own_type, e);
    PyObject **methods[4] = {&torch_is_contiguous, &torch_data_ptr, &torch_get_device, &torch_numel};
    PyObject *names[4] = {s_is_contiguous, s_data_ptr, s_get_device, s_numel};
    for (int i = 0; i < 4; i++) {
        PyObject *m = c == Py_None ? (Py_INCREF(Py_None), Py_None) : PyObject_GetAttr(c, names[i]);
        if (m == NULL) return NULL;
        SET(*methods[i], m);
    }
    Py_RETURN_NONE;
}

/* Pointers, sizes and ordinals are read with PyLong_AsSsize_t: PyLong_AsLongLong takes a slow
 * byte-array route for every value past 2**30 (each pointer). */
static int as_ll(PyObject *v, long long *out) {
    if (v == NULL) return -1;
    *out = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int attr_int(PyObject *o, PyObject *name, long long *out) { return as_ll(PyObject_GetAttr(o, name), out); }

int torch_contiguous(PyObject *t) {
    if (torch_is_contiguous == NULL || torch_is_contiguous == Py_None) {
        PyErr_SetString(PyExc_RuntimeError, "cuforge._claunch: torch.Tensor has not been published (set_array_types)");
        return -1;
    }
    PyObject *v = PyObject_CallFunctionObjArgs(torch_is_contiguous, t, NULL);
    if (v == NULL) return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* fn(o) as an integer, fn one of torch.Tensor's methods */
static int apply_int(PyObject *fn, PyObject *o, long long *out) {
    return as_ll(PyObject_CallFunctionObjArgs(fn, o, NULL), out);
}

static int attr_true(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* Whether obj.dtype is the DType expected, through mapping (None: obj.dtype is a DType). */
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

/* The ArrayArg that _arrays.array_arg makes of any other array: 1 accepted, 0 declined. */
static int from_array_arg(Spec *sp, PyObject *v, ArrayFacts *a) {
    PyObject *arg = PyObject_CallFunctionObjArgs(array_arg_fn, v, NULL);
    if (arg == NULL || arg == Py_None) {
        Py_XDECREF(arg);
        return arg == NULL ? -1 : 0;
    }
    int ok = -1;
    long long readonly;
    PyObject *dt = PyObject_GetAttr(arg, s_dtype), *shape = PyObject_GetAttr(arg, s_shape),
             *origin = PyObject_GetAttr(arg, s_origin);
    if (dt == NULL || shape == NULL || origin == NULL) goto done;
    if (dt != sp->dtype || (sp->ndim >= 0 && PyObject_Size(shape) != sp->ndim)) {
        ok = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    int contiguous = attr_true(arg, s_contiguous);
    if (contiguous <= 0 || attr_int(arg, s_readonly, &readonly) < 0 || (readonly && sp->writes)) {
        ok = contiguous < 0 || PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if (attr_int(arg, s_ptr, &a->ptr) < 0 || attr_int(arg, s_device, &a->device) < 0) goto done;
    if (a->device == -1 && PyUnicode_Compare(origin, s_numpy) != 0) { /* host memory not NumPy's: refused */
        ok = 0;
        goto done;
    }
    a->size = 1;
    for (Py_ssize_t i = 0, n = PyTuple_Size(shape); i < n; i++) {
        Py_ssize_t d = PyLong_AsSsize_t(PyTuple_GetItem(shape, i));
        if (d == -1 && PyErr_Occurred()) goto done;
        a->size *= d;
    }
    a->origin = PyUnicode_Compare(origin, s_cupy) == 0 ? 1 : PyUnicode_Compare(origin, s_torch) == 0 ? 2 : 0;
    ok = 1;
done:
    Py_DECREF(arg);
    Py_XDECREF(dt), Py_XDECREF(shape), Py_XDECREF(origin);
    return ok;
}

/* One array argument: 1 accepted (facts set), 0 declined, -1 error. */
int check_array(Spec *sp, PyObject *v, ArrayFacts *a) {
    PyObject *t = (PyObject *)Py_TYPE(v);
    long long ndim;
    int ok;
    if (t == cupy_type) {
        if ((ok = dtype_is(by_numpy, v, sp)) <= 0 || (ok = attr_true(v, s_c_contiguous)) <= 0) return ok;
        if (sp->ndim >= 0) {
            if (attr_int(v, s_ndim, &ndim) < 0) return -1;
            if (ndim != sp->ndim) return 0;
        }
        PyObject *mem = PyObject_GetAttr(v, s_data);
        if (mem == NULL) return -1;
        ok = attr_int(mem, s_ptr, &a->ptr) == 0 && attr_int(mem, s_device_id, &a->device) == 0;
        Py_DECREF(mem);
        if (!ok || attr_int(v, s_size, &a->size) < 0) return -1;
        a->origin = 1;
    } else if (t == own_type) {
        if ((ok = dtype_is(NULL, v, sp)) <= 0) return ok;
        if (sp->ndim >= 0) {
            PyObject *shape = PyObject_GetAttr(v, s_shape);
            if (shape == NULL) return -1;
            ndim = PyObject_Size(shape);
            Py_DECREF(shape);
            if (ndim != sp->ndim) return ndim < 0 ? -1 : 0;
        }
        if (attr_int(v, s_ptr, &a->ptr) < 0 || attr_int(v, s_device_id, &a->device) < 0 || attr_int(v, s_size, &a->size) < 0)
            return -1;
        a->origin = 0;
    } else if (t == torch_type) {
        long long contiguous;
        if ((ok = dtype_is(by_torch, v, sp)) <= 0) return ok;
        if (apply_int(torch_is_contiguous, v, &contiguous) < 0) return -1;
        if (!contiguous) return 0;
        if (sp->ndim >= 0) {
            if (attr_int(v, s_ndim, &ndim) < 0) return -1;
            if (ndim != sp->ndim) return 0;
        }
        if (apply_int(torch_data_ptr, v, &a->ptr) < 0 || apply_int(torch_get_device, v, &a->device) < 0 ||
            apply_int(torch_numel, v, &a->size) < 0)
            return -1;
        if (a->device < 0) return 0; /* a CPU tensor: the general path explains */
        a->origin = 2;
    } else {
        return from_array_arg(sp, v, a);
    }
    return 1;
}

/* The current stream of the library the first CuPy/PyTorch array came from, as an int. */
PyObject *current_stream(int origin, long long device) {
    if (origin == 1) {
        PyObject *s = PyObject_CallNoArgs(cupy_stream);
        PyObject *h = s == NULL ? NULL : PyObject_GetAttr(s, s_ptr);
        Py_XDECREF(s);
        return h;
    }
    PyObject *d = PyLong_FromLongLong(device);
    PyObject *h = d == NULL ? NULL : PyObject_CallFunctionObjArgs(torch_stream, d, NULL);
    Py_XDECREF(d);
    return h;
}
