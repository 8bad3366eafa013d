/* OpRunner: a cuforge PyTorch operator's implementation, called by PyTorch's dispatcher with
 * the operator's arguments (integrations/torch.py registers it).
 *
 * Per call: the outputs allocated (torch.empty_like of the tensor an output is shaped like,
 * where its dtype is that tensor's or a fixed one; any other rule through its Python
 * allocator), the sizes computed (each sizes= function called with the values it names), the
 * kernel launched with its values in parameter order (a Kernel through the C launcher; a
 * family's instantiation found by the setters' dtypes in one dict lookup), the written tensors'
 * version counters bumped, the outputs returned. Every position is computed in Python when the
 * operator is registered; this file only follows them.
 */
#include "claunch.h"

#define MAX_VALUES (2 * MAX_PARAMS)

typedef struct {
    int source;        /* the input the output is shaped like; -1: the Python allocator serves */
    int zeros;         /* torch.zeros_like rather than torch.empty_like */
    PyObject *dtype;   /* a torch.dtype, or None: the source's */
    PyObject *dtype_kw; /* {"dtype": dtype} */
    PyObject *alloc;   /* alloc(args, default) -> tensor, the Python rule */
} Output;

typedef struct {
    PyObject *fn;
    int n, at[8]; /* the row positions of its arguments (more than 8: through `fn` of the row) */
} Size;

typedef struct {
    PyObject_HEAD
    PyObject *kernel, *select, *options, *chosen, *default_device, *bump, *empty_like, *zeros_like;
    int ninputs, nparams, noutputs, nsizes, nsetters, nmutated;
    int order[MAX_PARAMS], setters[MAX_PARAMS], mutated[MAX_PARAMS];
    Output out[MAX_PARAMS];
    Size size[MAX_PARAMS];
} OpRunner;

static PyObject *s_dtype_name;

static int read_ints(PyObject *seq, int *dst, int most, int *count) {
    Py_ssize_t n = PyObject_Size(seq);
    if (n < 0) return -1;
    if (n > most) {
        PyErr_SetString(PyExc_ValueError, "OpRunner: too many positions");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PySequence_GetItem(seq, i);
        if (v == NULL) return -1;
        long x = PyLong_AsLong(v);
        Py_DECREF(v);
        if (x == -1 && PyErr_Occurred()) return -1;
        dst[i] = (int)x;
    }
    *count = (int)n;
    return 0;
}

/* One output, new reference. */
static PyObject *allocate(OpRunner *self, Output *o, PyObject *args, PyObject *const *row) {
    if (o->source >= 0) {
        PyObject *like = row[o->source];
        int contiguous = torch_contiguous(like);
        if (contiguous < 0) return NULL;
        if (contiguous) {
            PyObject *fill = o->zeros ? self->zeros_like : self->empty_like;
            PyObject *dt = PyObject_GetAttr(like, s_dtype_name);
            if (dt == NULL) return NULL;
            int same = o->dtype == Py_None || dt == o->dtype;
            Py_DECREF(dt);
            if (same) return PyObject_CallFunctionObjArgs(fill, like, NULL); /* no keyword for PyTorch to parse */
            PyObject *t = PyTuple_Pack(1, like);
            PyObject *r = t == NULL ? NULL : PyObject_Call(fill, t, o->dtype_kw);
            Py_XDECREF(t);
            return r;
        }
    }
    return PyObject_CallFunctionObjArgs(o->alloc, args, self->default_device, NULL);
}

static PyObject *compute_size(Size *s, PyObject *const *row) {
    if (s->n == 1) return PyObject_CallFunctionObjArgs(s->fn, row[s->at[0]], NULL);
    PyObject *t = PyTuple_New(s->n);
    if (t == NULL) return NULL;
    for (int i = 0; i < s->n; i++) {
        Py_INCREF(row[s->at[i]]);
        PyTuple_SetItem(t, i, row[s->at[i]]);
    }
    PyObject *r = PyObject_Call(s->fn, t, NULL);
    Py_DECREF(t);
    return r;
}

/* The kernel to launch: the Kernel, or the family's instantiation for the setters' dtypes. New reference. */
static PyObject *instantiation(OpRunner *self, PyObject *const *argv) {
    if (self->select == Py_None) return (Py_INCREF(self->kernel), self->kernel);
    PyObject *key = PyTuple_New(self->nsetters);
    if (key == NULL) return NULL;
    for (int i = 0; i < self->nsetters; i++) {
        PyObject *v = argv[self->setters[i]];
        PyObject *dt = v == Py_None ? (Py_INCREF(Py_None), Py_None) : PyObject_GetAttr(v, s_dtype_name);
        if (dt == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SetItem(key, i, dt);
    }
    PyObject *found = PyDict_GetItemWithError(self->chosen, key); /* borrowed */
    if (found != NULL) {
        Py_DECREF(key);
        return (Py_INCREF(found), found);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    /* new dtypes: the family picks (or names what it cannot take) */
    PyObject *t = PyTuple_New(self->nparams);
    if (t == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    for (int i = 0; i < self->nparams; i++) {
        Py_INCREF(argv[i]);
        PyTuple_SetItem(t, i, argv[i]);
    }
    found = PyObject_Call(self->select, t, NULL);
    Py_DECREF(t);
    if (found != NULL && PyDict_SetItem(self->chosen, key, found) < 0) Py_CLEAR(found);
    Py_DECREF(key);
    return found;
}

static PyObject *launch_values(OpRunner *self, PyObject *const *argv) {
    PyObject *kernel = instantiation(self, argv);
    if (kernel == NULL) return NULL;
    PyObject *r;
    if (self->options == Py_None) {
        r = call_kernel(kernel, argv, self->nparams);
    } else {
        PyObject *t = PyTuple_New(self->nparams);
        r = NULL;
        if (t != NULL) {
            for (int i = 0; i < self->nparams; i++) {
                Py_INCREF(argv[i]);
                PyTuple_SetItem(t, i, argv[i]);
            }
            r = PyObject_Call(kernel, t, self->options);
            Py_DECREF(t);
        }
    }
    Py_DECREF(kernel);
    return r;
}

static PyObject *oprunner_call(PyObject *op, PyObject *args, PyObject *kwargs) {
    OpRunner *self = (OpRunner *)op;
    Py_ssize_t n = PyTuple_Size(args);
    if (n != self->ninputs || (kwargs != NULL && PyDict_Size(kwargs) > 0)) {
        PyErr_Format(PyExc_TypeError, "OpRunner: expected %d positional arguments, got %zd", self->ninputs, n);
        return NULL;
    }
    PyObject *row[MAX_VALUES], *argv[MAX_PARAMS], *result = NULL;
    int made = 0; /* row[ninputs .. ninputs + made) are new references */
    for (Py_ssize_t i = 0; i < n; i++) row[i] = PyTuple_GetItem(args, i);
    for (int j = 0; j < self->noutputs; j++, made++)
        if ((row[n + j] = allocate(self, &self->out[j], args, row)) == NULL) goto done;
    for (int k = 0; k < self->nsizes; k++, made++)
        if ((row[n + self->noutputs + k] = compute_size(&self->size[k], row)) == NULL) goto done;
    for (int i = 0; i < self->nparams; i++) argv[i] = row[self->order[i]];
    PyObject *r = launch_values(self, argv);
    if (r == NULL) goto done;
    Py_DECREF(r);
    if (self->nmutated) { /* as PyTorch's in-place ops do, so that autograd sees the writes */
        PyObject *written = PyList_New(0);
        if (written == NULL) goto done;
        for (int i = 0; i < self->nmutated; i++)
            if (row[self->mutated[i]] != Py_None && PyList_Append(written, row[self->mutated[i]]) < 0) {
                Py_DECREF(written);
                goto done;
            }
        r = PyObject_CallFunctionObjArgs(self->bump, written, NULL);
        Py_DECREF(written);
        if (r == NULL) goto done;
        Py_DECREF(r);
    }
    if (self->noutputs == 0) {
        result = (Py_INCREF(Py_None), Py_None);
    } else if (self->noutputs == 1) {
        result = (Py_INCREF(row[n]), row[n]);
    } else if ((result = PyTuple_New(self->noutputs)) != NULL) {
        for (int j = 0; j < self->noutputs; j++) {
            Py_INCREF(row[n + j]);
            PyTuple_SetItem(result, j, row[n + j]);
        }
    }
done:
    for (int i = 0; i < made; i++) Py_DECREF(row[n + i]);
    return result;
}

#define RUNNER_OBJECTS(X) X(kernel) X(select) X(options) X(chosen) X(default_device) X(bump) X(empty_like) X(zeros_like)

static int oprunner_traverse(OpRunner *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
#define VISIT(field) Py_VISIT(self->field);
    RUNNER_OBJECTS(VISIT)
#undef VISIT
    for (int j = 0; j < self->noutputs; j++) {
        Py_VISIT(self->out[j].dtype);
        Py_VISIT(self->out[j].dtype_kw);
        Py_VISIT(self->out[j].alloc);
    }
    for (int k = 0; k < self->nsizes; k++) Py_VISIT(self->size[k].fn);
    return 0;
}

static int oprunner_clear(OpRunner *self) {
#define CLEAR(field) Py_CLEAR(self->field);
    RUNNER_OBJECTS(CLEAR)
#undef CLEAR
    for (int j = 0; j < self->noutputs; j++) {
        Py_CLEAR(self->out[j].dtype);
        Py_CLEAR(self->out[j].dtype_kw);
        Py_CLEAR(self->out[j].alloc);
    }
    for (int k = 0; k < self->nsizes; k++) Py_CLEAR(self->size[k].fn);
    return 0;
}

static void oprunner_dealloc(OpRunner *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    oprunner_clear(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static int read_outputs(OpRunner *self, PyObject *outputs) {
    Py_ssize_t n = PyObject_Size(outputs);
    if (n < 0) return -1;
    if (n > MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "OpRunner: too many outputs");
        return -1;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        Output *o = &self->out[j];
        PyObject *item = PySequence_GetItem(outputs, j);
        if (item == NULL) return -1;
        int source, zeros;
        PyObject *dtype, *alloc;
        int ok = PyArg_ParseTuple(item, "iOpO", &source, &dtype, &zeros, &alloc);
        Py_DECREF(item);
        if (!ok) return -1;
        Py_INCREF(dtype), Py_INCREF(alloc);
        o->dtype = dtype, o->alloc = alloc, o->source = source, o->zeros = zeros;
        o->dtype_kw = Py_BuildValue("{sO}", "dtype", dtype);
        self->noutputs = (int)j + 1; /* from here on oprunner_clear releases it */
        if (o->dtype_kw == NULL) return -1;
    }
    return 0;
}

static int read_sizes(OpRunner *self, PyObject *sizes) {
    Py_ssize_t n = PyObject_Size(sizes);
    if (n < 0) return -1;
    if (n > MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "OpRunner: too many sizes");
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        Size *s = &self->size[k];
        PyObject *item = PySequence_GetItem(sizes, k), *fn, *at;
        if (item == NULL) return -1;
        int ok = PyArg_ParseTuple(item, "OO", &fn, &at);
        if (ok) {
            Py_INCREF(fn);
            s->fn = fn;
            self->nsizes = (int)k + 1;
            ok = read_ints(at, s->at, 8, &s->n) == 0;
        }
        Py_DECREF(item);
        if (!ok) return -1;
    }
    return 0;
}

/* OpRunner(kernel, select, options, ninputs, order, setters, outputs, default, sizes, mutated, bump,
 *          empty_like, zeros_like): see integrations/torch.py, which makes them. */
static PyObject *oprunner_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    (void)kwargs;
    PyObject *kernel, *select, *options, *order, *setters, *outputs, *dflt, *sizes, *mutated, *bump, *empty_like,
        *zeros_like;
    int ninputs;
    if (!PyArg_ParseTuple(args, "OOOiOOOOOOOOO", &kernel, &select, &options, &ninputs, &order, &setters, &outputs, &dflt,
                          &sizes, &mutated, &bump, &empty_like, &zeros_like))
        return NULL;
    if (s_dtype_name == NULL && (s_dtype_name = PyUnicode_InternFromString("dtype")) == NULL) return NULL;
    if (select == Py_None && !is_kernel(kernel)) {
        PyErr_SetString(PyExc_TypeError, "OpRunner: a kernel without select must be a cuforge Kernel");
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    OpRunner *self = (OpRunner *)alloc(type, 0);
    if (self == NULL) return NULL;
    self->noutputs = self->nsizes = 0;
#define KEEP(field, value) (Py_INCREF(value), self->field = (value))
    KEEP(kernel, kernel), KEEP(select, select), KEEP(options, options), KEEP(default_device, dflt), KEEP(bump, bump);
    KEEP(empty_like, empty_like), KEEP(zeros_like, zeros_like);
#undef KEEP
    self->chosen = PyDict_New();
    self->ninputs = ninputs;
    if (self->chosen == NULL || read_ints(order, self->order, MAX_PARAMS, &self->nparams) < 0 ||
        read_ints(setters, self->setters, MAX_PARAMS, &self->nsetters) < 0 ||
        read_ints(mutated, self->mutated, MAX_PARAMS, &self->nmutated) < 0 || read_outputs(self, outputs) < 0 ||
        read_sizes(self, sizes) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    int nrow = ninputs + self->noutputs + self->nsizes;
    int bad = ninputs < 0 || nrow > MAX_VALUES;
    for (int i = 0; i < self->nparams; i++) bad |= self->order[i] < 0 || self->order[i] >= nrow;
    for (int i = 0; i < self->nsetters; i++) bad |= self->setters[i] < 0 || self->setters[i] >= self->nparams;
    for (int i = 0; i < self->nmutated; i++) bad |= self->mutated[i] < 0 || self->mutated[i] >= ninputs;
    for (int j = 0; j < self->noutputs; j++) bad |= self->out[j].source >= ninputs;
    for (int k = 0; k < self->nsizes; k++)
        for (int i = 0; i < self->size[k].n; i++) /* the inputs and outputs: no size reads another */
            bad |= self->size[k].at[i] < 0 || self->size[k].at[i] >= ninputs + self->noutputs;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "OpRunner: a position lies outside the call's values");
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyType_Slot oprunner_slots[] = {
    {Py_tp_call, oprunner_call},
    {Py_tp_new, oprunner_new},
    {Py_tp_traverse, oprunner_traverse},
    {Py_tp_clear, oprunner_clear},
    {Py_tp_dealloc, oprunner_dealloc},
    {Py_tp_doc, "A cuforge PyTorch operator's implementation (see oprunner.c)."},
    {0, NULL},
};

PyType_Spec oprunner_spec = {
    "cuforge._claunch.OpRunner", sizeof(OpRunner), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, oprunner_slots,
};
