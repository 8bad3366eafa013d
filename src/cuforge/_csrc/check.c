/* check_and_pack(): one call's arguments checked against a kernel's parameters and packed
 * into its parameter buffer, with no CUDA call.
 *
 * The rules are the Python checks' (_launch/checks.py), with their data (ranges, limits, ranks)
 * read from the same ParamSpec records. This file takes the common scalars by itself (Python
 * int/float/bool in range) and hands every other scalar to the parameter's Python converter;
 * arrays.c reads the arrays. So what the Python checks accept, this accepts with the same
 * bytes. What neither takes is declined, and the general path raises its error. A Hypothesis test
 * (tests/unit/test_launch_paths.py) holds the two to the same answers.
 */
#include "claunch.h"

PyObject *cuda_module;
/* Set once by configure(). */
static PyObject *dims_fn, *dims_memo, *grid_limit, *block_limit, *grid_key, *block_key, *stream_fn;
static unsigned long long grid_max;
static PyObject *s_grid, *s_block, *s_cuda_stream;

static int intern_all(void) {
    INTERN(s_grid, "grid");
    INTERN(s_block, "block");
    INTERN(s_cuda_stream, "__cuda_stream__");
    return 0;
}

/* configure(cuda_module, by_numpy, by_torch, array_arg, dims, dims_memo, grid_limit, block_limit,
 *           stream_handle): the Python side of every Launcher, once. */
PyObject *py_configure(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *a[9];
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7], &a[8]))
        return NULL;
    if (intern_all() < 0 || configure_arrays(a[1], a[2], a[3]) < 0) return NULL;
    PyObject **dst[6] = {&dims_fn, &dims_memo, &grid_limit, &block_limit, &stream_fn, &cuda_module};
    PyObject *src[6] = {a[4], a[5], a[6], a[7], a[8], a[0]};
    for (int i = 0; i < 6; i++) keep(dst[i], src[i]);
    /* launch_rules.dims memoises valid values under (value, id(limit)) */
    SET(grid_key, PyLong_FromVoidPtr(grid_limit));
    SET(block_key, PyLong_FromVoidPtr(block_limit));
    grid_max = PyLong_AsUnsignedLongLong(PyTuple_GetItem(grid_limit, 0));
    if (grid_key == NULL || block_key == NULL || PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static int spec_int(PyObject *spec, const char *name, long long *out) {
    PyObject *v = PyObject_GetAttrString(spec, name);
    if (v == NULL) return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* Each ParamSpec's fields, read once; converters[i] is parameter i's scalar_to_bytes (None
 * for arrays). */
int read_specs(Launcher *self, PyObject *specs, PyObject *converters) {
    Py_ssize_t n = PyObject_Size(specs);
    if (n < 0) return -1;
    if (n > MAX_PARAMS || PyObject_Size(converters) != n) {
        PyErr_SetString(PyExc_ValueError, "Launcher: too many parameters, or one converter per parameter missing");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Spec *sp = &self->spec[i];
        PyObject *item = PySequence_GetItem(specs, i);
        if (item == NULL) return -1;
        long long size, offset, ndim, writes, optional, lo;
        PyObject *kind = PyObject_GetAttrString(item, "ckind"), *hi = PyObject_GetAttrString(item, "hi"),
                 *limit = PyObject_GetAttrString(item, "limit");
        sp->name = PyObject_GetAttrString(item, "name");
        sp->dtype = PyObject_GetAttrString(item, "dtype");
        sp->convert = PySequence_GetItem(converters, i);
        self->nparams = (int)i + 1; /* from here on launcher_clear releases this Spec */
        int bad = kind == NULL || hi == NULL || limit == NULL || sp->name == NULL || sp->dtype == NULL ||
                  sp->convert == NULL || spec_int(item, "size", &size) < 0 || spec_int(item, "offset", &offset) < 0 ||
                  spec_int(item, "ndim", &ndim) < 0 || spec_int(item, "writes", &writes) < 0 ||
                  spec_int(item, "optional", &optional) < 0 || spec_int(item, "lo", &lo) < 0;
        if (!bad) {
            const char *k = PyUnicode_AsUTF8AndSize(kind, NULL);
            sp->kind = k == NULL ? 0 : k[0];
            sp->hi = PyLong_AsUnsignedLongLong(hi);
            sp->limit = PyFloat_AsDouble(limit);
            sp->size = (int)size, sp->offset = (int)offset, sp->ndim = (int)ndim, sp->writes = (int)writes;
            sp->optional = (int)optional;
            sp->lo = lo;
            bad = PyErr_Occurred() != NULL;
        }
        Py_DECREF(item);
        Py_XDECREF(kind), Py_XDECREF(hi), Py_XDECREF(limit);
        if (bad) return -1;
        if (sp->offset < 0 || sp->size <= 0 || sp->offset + sp->size > MAX_PARAM_BYTES || sp->offset % sp->size != 0) {
            PyErr_SetString(PyExc_ValueError, "Launcher: a parameter lies outside the C launcher's buffer");
            return -1;
        }
        if (sp->offset + sp->size > self->size) self->size = sp->offset + sp->size;
    }
    return 0;
}

/* ------------------------------------------------------------------ scalars */

/* One scalar argument packed at dst: 1 accepted, 0 declined, -1 error. as_int gets an
 * integer's value (a grid sized by the parameter reads it). */
static int pack_scalar(const Spec *sp, PyObject *v, char *dst, long long *as_int) {
    int native = 0;
    if ((sp->kind == 'i' || sp->kind == 'u') && PyLong_CheckExact(v)) {
        long long x;
        int overflow;
        if (sp->kind == 'i') {
            x = PyLong_AsLongLongAndOverflow(v, &overflow);
            native = !overflow && !(x == -1 && PyErr_Occurred()) && x >= sp->lo && (x < 0 || (unsigned long long)x <= sp->hi);
        } else {
            unsigned long long u = PyLong_AsUnsignedLongLong(v);
            native = !(u == (unsigned long long)-1 && PyErr_Occurred()) && u <= sp->hi;
            x = (long long)u;
        }
        PyErr_Clear();
        if (native) {
            *as_int = x;
            switch (sp->size) {
            case 1: *(int8_t *)dst = (int8_t)x; break;
            case 2: *(int16_t *)dst = (int16_t)x; break;
            case 4: *(int32_t *)dst = (int32_t)x; break;
            default: *(int64_t *)dst = (int64_t)x; break;
            }
            return 1;
        }
    } else if (sp->kind == 'b' && (v == Py_True || v == Py_False)) {
        *(unsigned char *)dst = v == Py_True;
        return 1;
    } else if ((sp->kind == 'f' || sp->kind == 'd') && PyFloat_CheckExact(v)) {
        double d = PyFloat_AsDouble(v);
        if (d >= -sp->limit && d <= sp->limit) { /* NaN and inf go to the Python checks */
            if (sp->kind == 'f')
                *(float *)dst = (float)d;
            else
                *(double *)dst = d;
            return 1;
        }
    }
    /* Anything else: the parameter's Python checks convert it, or refuse it. */
    PyObject *packed = PyObject_CallFunctionObjArgs(sp->convert, v, NULL);
    if (packed == NULL) return 0; /* refused: the general path raises the same error */
    int ok = PyBytes_Check(packed) && PyBytes_Size(packed) == sp->size;
    if (ok) {
        memcpy(dst, PyBytes_AsString(packed), (size_t)sp->size);
        if (sp->kind == 'i' || sp->kind == 'u') {
            long long x = 0;
            switch (sp->size) {
            case 1: x = sp->kind == 'i' ? (long long)*(int8_t *)dst : (long long)*(uint8_t *)dst; break;
            case 2: x = sp->kind == 'i' ? (long long)*(int16_t *)dst : (long long)*(uint16_t *)dst; break;
            case 4: x = sp->kind == 'i' ? (long long)*(int32_t *)dst : (long long)*(uint32_t *)dst; break;
            default: x = *(int64_t *)dst; break;
            }
            *as_int = x;
        }
    }
    Py_DECREF(packed);
    return ok;
}

/* ------------------------------------------------------------------ launch options */

/* An int or a tuple of ints, exactly (the memo compares keys by value). */
static int exact_ints(PyObject *arg) {
    if (PyLong_CheckExact(arg)) return 1;
    if (!PyTuple_CheckExact(arg)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_Size(arg); i++)
        if (!PyLong_CheckExact(PyTuple_GetItem(arg, i))) return 0;
    return 1;
}

/* The checked 3 dims of a grid= or block= argument: 1 found, 0 declined. The last argument
 * seen is found by identity, others among the values launch_rules.dims memoised, the rest by
 * launch_rules.dims itself (which memoises them). */
static int lookup_dims(Launcher *self, PyObject *arg, PyObject *what, PyObject *key, PyObject *limit, PyObject **last,
                       unsigned int cached[3], unsigned int out[3]) {
    if (arg != *last) {
        PyObject *found = NULL, *k = PyTuple_Pack(2, arg, key);
        if (k == NULL) return -1;
        PyObject *memo = PyDict_GetItemWithError(dims_memo, k); /* borrowed; fails for unhashable args */
        Py_DECREF(k);
        if (memo != NULL && !exact_ints(arg)) memo = NULL; /* (256.0,) equals (256,): launch_rules.dims refuses it */
        if (memo != NULL) {
            Py_INCREF(memo);
            found = memo;
        } else {
            PyErr_Clear();
            found = PyObject_CallFunctionObjArgs(dims_fn, arg, what, self->name, limit, NULL);
        }
        if (found == NULL || dims3(found, "grid or block", cached) < 0) {
            Py_XDECREF(found);
            PyErr_Clear();
            SET(*last, NULL); /* cached[] no longer holds *last's dims */
            return 0;
        }
        Py_DECREF(found);
        if (PyTuple_Check(arg) || PyLong_Check(arg)) { /* immutable: safe to know again by identity */
            Py_INCREF(arg);
            SET(*last, arg);
        } else {
            SET(*last, NULL);
        }
    }
    out[0] = cached[0], out[1] = cached[1], out[2] = cached[2];
    return 1;
}

/* stream.__cuda_stream__()[1] when it is an int (the protocol's usual answer), else NULL. */
static PyObject *protocol_handle(PyObject *stream) {
    PyObject *pair = PyObject_CallMethodObjArgs(stream, s_cuda_stream, NULL), *h = NULL;
    if (pair != NULL && PyTuple_Check(pair) && PyTuple_Size(pair) == 2 && PyLong_CheckExact(PyTuple_GetItem(pair, 1))) {
        h = PyTuple_GetItem(pair, 1);
        Py_INCREF(h);
    }
    Py_XDECREF(pair);
    PyErr_Clear();
    return h;
}

/* A stream= argument as a handle: 1 done, 0 declined. Ints and the __cuda_stream__ protocol
 * (cuda.core, CuPy) are read here; anything else by _launch.stream_handle. */
static int stream_of(Launcher *self, PyObject *stream, void **out) {
    PyObject *h = PyLong_CheckExact(stream) ? (Py_INCREF(stream), stream) : protocol_handle(stream);
    if (h == NULL) h = PyObject_CallFunctionObjArgs(stream_fn, stream, self->name, NULL);
    if (h == NULL) return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(h);
    Py_DECREF(h);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return 0;
    *out = (void *)(uintptr_t)v;
    return 1;
}

/* Positional args, then arguments by name, into argv in parameter order: 1 bound, 0 declined. */
static int bind(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *named, PyObject **argv) {
    int n = self->nparams;
    if (nargs > n) return 0;
    for (int i = 0; i < n; i++) argv[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (named != NULL && PyDict_Next(named, &pos, &k, &v)) {
        int j = 0;
        while (j < n && k != self->spec[j].name && PyUnicode_Compare(k, self->spec[j].name) != 0) j++;
        if (j == n || argv[j] != NULL) return 0; /* unknown, or given twice */
        argv[j] = v;
    }
    PyErr_Clear();
    for (int i = 0; i < n; i++) {
        if (argv[i] == NULL && !self->spec[i].optional) return 0;
        if (argv[i] == NULL) argv[i] = Py_None; /* an Optional array left out (borrowed, as argv is) */
    }
    return 1;
}

static int grid_from_rule(Launcher *self, PyObject **argv, const long long *sizes, const long long *ints,
                          Packed *out) {
    const unsigned int *b = out->dims.block;
    long long count = -1;
    if (self->grid_rule == -2) { /* the class's grid function */
        PyObject *argt = PyTuple_New(self->nparams), *blk = NULL, *g = NULL;
        if (argt == NULL) return -1;
        for (int i = 0; i < self->nparams; i++) {
            Py_INCREF(argv[i]);
            PyTuple_SetItem(argt, i, argv[i]);
        }
        blk = Py_BuildValue("(III)", b[0], b[1], b[2]);
        if (blk != NULL) g = PyObject_CallFunctionObjArgs(self->grid_fn, argt, blk, NULL);
        Py_DECREF(argt);
        Py_XDECREF(blk);
        int r = g != NULL && dims3(g, "grid", out->dims.grid) == 0;
        Py_XDECREF(g);
        PyErr_Clear();
        return r ? ACCEPT : DECLINE;
    }
    if (self->grid_rule <= -3) { /* cf.blocks: parameter k's value is the number of blocks */
        int k = -3 - self->grid_rule;
        count = ints[k];
        if (count < 1 || (unsigned long long)count > grid_max) return DECLINE; /* the general path explains */
        out->dims.grid[0] = (unsigned int)count, out->dims.grid[1] = out->dims.grid[2] = 1;
        return ACCEPT;
    }
    if (self->grid_rule == -1) {
        for (int i = 0; i < self->nparams; i++)
            if (self->spec[i].kind == 'a' && sizes[i] > count) count = sizes[i];
    } else {
        int k = self->grid_rule;
        count = self->spec[k].kind == 'a' ? sizes[k] : ints[k];
        if (self->spec[k].kind == 'u' && count < 0) return DECLINE; /* a uint64 past 2**63: past the limit */
    }
    if (count <= 0) return NOTHING;
    unsigned long long n = ((unsigned long long)count + b[0] - 1) / b[0];
    if (n > grid_max) return DECLINE; /* the general path names the limit */
    out->dims.grid[0] = (unsigned int)n, out->dims.grid[1] = out->dims.grid[2] = 1;
    return ACCEPT;
}

int check_and_pack(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *named, PyObject *grid,
                   PyObject *block, PyObject *shared, PyObject *stream, Packed *out) {
    PyObject *argv[MAX_PARAMS];
    long long sizes[MAX_PARAMS], ints[MAX_PARAMS];
    if (named == NULL && nargs == self->nparams) {
        for (Py_ssize_t i = 0; i < nargs; i++) argv[i] = args[i];
    } else if (!bind(self, args, nargs, named, argv)) {
        return DECLINE;
    }
    out->origin = 0, out->narrays = 0;
    memset(out->buf, 0, (size_t)self->size); /* padding too: the bytes are compared in tests */
    for (int i = 0; i < self->nparams; i++) { /* scalars first, as the Python checks run in order */
        Spec *sp = &self->spec[i];
        out->ptrs[i] = (char *)out->buf + sp->offset;
        if (sp->kind == 'a') continue;
        int ok = pack_scalar(sp, argv[i], out->ptrs[i], &ints[i]);
        if (ok <= 0) goto decline;
    }
    for (int i = 0; i < self->nparams; i++) {
        Spec *sp = &self->spec[i];
        if (sp->kind != 'a') continue;
        if (argv[i] == Py_None && sp->optional) { /* a null pointer (the buffer is zeroed): no device, no size */
            sizes[i] = 0;
            continue;
        }
        ArrayFacts a;
        int ok = check_array(sp, argv[i], &a);
        if (ok <= 0) goto decline;
        *(void **)out->ptrs[i] = (void *)(intptr_t)a.ptr;
        sizes[i] = a.size;
        out->devices[out->narrays++] = a.device;
        if (out->origin == 0) out->origin = a.origin;
    }
    if (!PyLong_CheckExact(shared)) goto decline;
    unsigned long smem = PyLong_AsUnsignedLong(shared);
    if ((smem == (unsigned long)-1 && PyErr_Occurred()) || smem > UINT_MAX) goto decline;
    out->dims.smem = smem ? (unsigned int)smem : self->smem_default;
    out->have_stream = stream != Py_None;
    out->dims.stream = NULL;
    if (out->have_stream && !stream_of(self, stream, &out->dims.stream)) goto decline;
    if (block == Py_None) {
        memcpy(out->dims.block, self->block_default, sizeof self->block_default);
    } else if (lookup_dims(self, block, s_block, block_key, block_limit, &self->last_block, self->last_block_dims,
                           out->dims.block) <= 0) {
        goto decline;
    }
    if (grid == Py_None) {
        int r = grid_from_rule(self, argv, sizes, ints, out);
        if (r != ACCEPT) return r;
    } else if (lookup_dims(self, grid, s_grid, grid_key, grid_limit, &self->last_grid, self->last_grid_dims,
                           out->dims.grid) <= 0) {
        goto decline;
    }
    if (self->attrs == Py_None) {
        out->dims.attrs = NULL, out->dims.nattrs = 0;
    } else {
        out->dims.attrs = PyBytes_AsString(self->attrs);
        out->dims.nattrs = (unsigned int)(PyBytes_Size(self->attrs) / 72);
    }
    return ACCEPT;
decline:
    PyErr_Clear();
    return DECLINE;
}
