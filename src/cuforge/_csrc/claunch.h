/* cuforge._claunch: the fast launch path, in C (see launcher.c for the overview).
 *
 * Five files, one module:
 *   driver.c    the driver's launch entry points (cuLaunchKernelEx, or cuLaunchKernel for
 *               drivers older than CUDA 12.0), the raw launch(), the last-launch record;
 *   check.c     check_and_pack(): a call's arguments checked and packed with no CUDA call;
 *   arrays.c    the array arguments' reading and checks, for check.c;
 *   launcher.c  Launcher (check_and_pack, then the call) and KernelBase (cuforge.Kernel's
 *               base, whose tp_call hands calls to the Launcher), and the module itself;
 *   oprunner.c  OpRunner, a PyTorch operator's implementation (integrations/torch.py).
 */
#ifndef CUFORGE_CLAUNCH_H
#define CUFORGE_CLAUNCH_H

#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The C launcher's limits, exported to Python as MAX_PARAMS and MAX_PARAM_BYTES: a kernel
 * past them is launched by the general path alone. */
#define MAX_PARAM_BYTES 4096
#define MAX_PARAMS 256

enum { CUDA_ERROR_NOT_INITIALIZED = 3, CUDA_ERROR_NOT_SUPPORTED = 801 };

/* Replace a reference held in *dst (Py_XSETREF is not in the stable ABI). */
#define SET(dst, value)                     \
    do {                                    \
        PyObject *old_ = (PyObject *)(dst); \
        (dst) = (value);                    \
        Py_XDECREF(old_);                   \
    } while (0)

/* ------------------------------------------------------------------ driver.c */

/* One launch: grid, block, dynamic shared memory, stream, and the launch attributes
 * (CUlaunchAttribute records, 72 bytes each, built by LaunchConfig.attributes in _runtime/launch.py). */
typedef struct {
    unsigned int grid[3], block[3], smem;
    void *stream;
    const void *attrs;
    unsigned int nattrs;
} LaunchDims;

int has_entry(void);
/* The driver call, GIL released; a CUresult. */
int launch_ex(void *function, const LaunchDims *d, void **params);
void note_launch_c(PyObject *name, const LaunchDims *d);
int dims3(PyObject *t, const char *what, unsigned int out[3]);
/* Make device 0's primary context current in this thread: 1 done, 0 not set up (ask Python). */
int adopt_thread(void **ctx);
int context_is_current(void *ctx);
PyObject *py_set_context(PyObject *module, PyObject *args);

PyObject *py_set_entry(PyObject *module, PyObject *args);
PyObject *py_launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_note_launch(PyObject *module, PyObject *args);
PyObject *py_last_launch(PyObject *module, PyObject *unused);
PyObject *py_recent_launches(PyObject *module, PyObject *unused);
PyObject *py_launch_count(PyObject *module, PyObject *unused);

static inline void keep(PyObject **dst, PyObject *value) {
    Py_INCREF(value);
    SET(*dst, value);
}

#define INTERN(var, text) \
    if (var == NULL && (var = PyUnicode_InternFromString(text)) == NULL) return -1

/* ------------------------------------------------------------------ check.c, arrays.c */

typedef struct {
    int kind;          /* 'a' array; 'i' 'u' 'f' 'd' 'b' scalars taken here; 'x' converted in Python */
    int size, offset;  /* in the parameter buffer */
    int ndim, writes;  /* arrays: rank (-1 any), written by the kernel */
    int optional;      /* arrays: None is a null pointer (cf.Optional) */
    long long lo;      /* 'i': range */
    unsigned long long hi; /* 'i' 'u': range */
    double limit;      /* 'f' 'd': largest finite value */
    PyObject *name;    /* the parameter's name (binding by keyword) */
    PyObject *dtype;   /* arrays: the cuforge DType expected */
    PyObject *seen;    /* arrays: the library's dtype object last found to be it */
    PyObject *convert; /* scalars: the Python checks' scalar_to_bytes(value) -> bytes */
} Spec;

typedef struct {
    PyObject_HEAD
    int nparams, size; /* size: bytes of the parameter buffer in use */
    Spec spec[MAX_PARAMS];
    PyObject *name, *by_device, *grid_fn, *attrs, *last_grid, *last_block;
    unsigned int block_default[3];
    unsigned int smem_default; /* a class's fixed shared_mem, taken where the call leaves shared_mem 0 */
    unsigned int last_grid_dims[3], last_block_dims[3]; /* the checked values of last_grid/last_block */
    int grid_rule; /* -2: grid_fn(args, block), -1: the largest array, k: parameter k's value or size (in
                    * threads), -3 - k: parameter k's value in blocks (cf.blocks) */
    long long function_device; /* the device of function (-1: none yet) */
    void *function;
    unsigned long long max_threads, max_shared; /* the loaded kernel's limits there (_limits.Loaded) */
} Launcher;

/* A call, checked and packed: what check_and_pack() fills in. */
typedef struct {
    unsigned long long buf[MAX_PARAM_BYTES / 8];
    void *ptrs[MAX_PARAMS];
    long long devices[MAX_PARAMS]; /* of each array, in parameter order; -1 host, -2 unknown */
    int narrays;
    int origin; /* 1: the first CuPy/PyTorch array is CuPy's, 2: PyTorch's, 0: neither */
    int have_stream;
    LaunchDims dims;
} Packed;

enum { DECLINE = 0, ACCEPT = 1, NOTHING = 2 };

/* One array argument, as check_array reads it. */
typedef struct {
    long long ptr, device, size;
    int origin; /* 1 CuPy, 2 PyTorch, 0 other */
} ArrayFacts;

/* 1 accepted (facts set), 0 declined, -1 error (arrays.c). */
int check_array(Spec *sp, PyObject *v, ArrayFacts *a);
int configure_arrays(PyObject *numpy_dtypes, PyObject *torch_dtypes, PyObject *array_arg);

/* ACCEPT, DECLINE (no exception set: the general path explains) or NOTHING (an empty grid);
 * -1 only for an exception the general path would not raise (out of memory). */
int check_and_pack(Launcher *self, PyObject *const *args, Py_ssize_t nargs, PyObject *named, PyObject *grid,
                   PyObject *block, PyObject *shared, PyObject *stream, Packed *out);
int read_specs(Launcher *self, PyObject *specs, PyObject *converters);
PyObject *py_configure(PyObject *module, PyObject *args);
PyObject *py_set_array_types(PyObject *module, PyObject *args);
PyObject *current_stream(int origin, long long device); /* the arrays' library's current stream, as an int */

extern PyObject *cuda_module; /* cuforge._runtime.cuda, for current_device() */
/* torch.Tensor.is_contiguous(t): 1, 0, or -1 with an exception (arrays.c) */
int torch_contiguous(PyObject *t);

/* ------------------------------------------------------------------ launcher.c, oprunner.c */

/* Whether o is a cuforge.Kernel (a KernelBase). */
int is_kernel(PyObject *o);
/* kernel(*argv), kernel a cuforge.Kernel, with no launch option: the C launcher, else the
 * general path. New reference (None), or NULL with an exception. */
PyObject *call_kernel(PyObject *kernel, PyObject *const *argv, Py_ssize_t n);
extern PyType_Spec oprunner_spec;

#endif
