// cuforge's XLA FFI handlers: a cuforge kernel launched by XLA, on the CPU (cuforge's CPU backend,
// on XLA's host buffers in place) and on a CUDA GPU (cuLaunchKernel on XLA's stream).
//
// Built at first use by cuforge.jax against the installed jaxlib's headers (jax.ffi.include_dir()),
// so that the FFI's structs and version are always those of the XLA that calls it. It links to
// nothing: cuforge hands it the functions it calls (the CPU runtime's cuforge_cpu_run, the
// driver's cuLaunchKernel) and a callback that compiles or loads a kernel the first time a device
// asks for it (cuforge_jax_setup).
//
// One op (struct cuforge_jax_op, filled by Python when the op is traced) is one launch with its
// shapes fixed: the kernel's packed scalar parameters, its grid, block and shared memory, and which
// parameter each XLA buffer is. A call's work is: read the buffers' addresses, point the parameter
// array at them, launch. XLA passes the op as two u64 attributes: its address, and this process's
// token, so that an executable reloaded in another process (a persistent compilation cache, an
// export) fails with a message instead of following a stale pointer.
#include <atomic>
#include <cstdint>
#include <cstring>

#include "cuforge_cpu_abi.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

#define CUFORGE_JAX_EXPORT extern "C" __attribute__((visibility("default")))

struct CUstream_st;  // cuda.h's CUstream is a pointer to it (no CUDA header is needed here)
typedef CUstream_st* CUstream;

extern "C" {
enum { CUFORGE_JAX_DEVICES = 64, CUFORGE_JAX_PARAMS = 256, CUFORGE_JAX_MESSAGE = 1024 };

struct cuforge_jax_op {
    void* cpu_entry;                        // the kernel's CPU entry, once built
    void* functions[CUFORGE_JAX_DEVICES];   // its CUkernel (a CUfunction to cuLaunchKernel) per device ordinal
    unsigned grid[3], block[3];             // grid[0] == 0: nothing to launch (an empty sizing array)
    unsigned long long shared_mem;
    int nparams, nslots;
    void* const* params;                    // each parameter's address in the packed values
    const int* slot_param;                  // the parameter of each array slot
    const int* slot_buffer;                 // its buffer: operand i (>= 0) or result -1 - j
};

// (op, platform: 0 the CPU, 1 CUDA, device ordinal, message, its size) -> 0, or 1 with a message
typedef int (*cuforge_jax_resolve)(cuforge_jax_op*, int, int, char*, unsigned long long);
typedef int (*cuforge_jax_launch)(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned shared, CUstream stream, void** params, void** extra);
typedef int (*cuforge_jax_error_name)(int, const char**);
typedef void (*cuforge_jax_cpu_run)(cuforge_cpu_entry, cuforge_cpu_launch*);
}

namespace {

uint64_t process_token = 0;
std::atomic<unsigned long long> calls{0};  // the handlers' calls (what a CUDA graph's replay does not make)
cuforge_jax_resolve resolve = nullptr;
cuforge_jax_cpu_run cpu_run = nullptr;
cuforge_jax_launch cu_launch = nullptr;
cuforge_jax_error_name cu_error_name = nullptr;

ffi::Error Stale() {
    return ffi::Error(ffi::ErrorCode::kFailedPrecondition,
                      "cuforge: this XLA executable holds a cuforge op traced in another process (a persistent "
                      "compilation cache or an exported function); cuforge ops run only in the process that traced "
                      "them: trace the function again");
}

// The parameter array of one call: the packed values, each array's slot pointed at its buffer's address.
template <typename Buffers>
ffi::Error Bind(const cuforge_jax_op* op, const Buffers& buffers, void** params, void** data) {
    std::memcpy(params, op->params, sizeof(void*) * op->nparams);
    for (int k = 0; k < op->nslots; ++k) {
        ffi::ErrorOr<void*> found = buffers(op->slot_buffer[k]);
        if (!found.has_value()) return found.error();
        data[k] = *found;
        params[op->slot_param[k]] = &data[k];
    }
    return ffi::Error::Success();
}

template <typename Buffers>
ffi::Error Launch(const cuforge_jax_op* op, int platform, int device, const Buffers& buffers, CUstream stream) {
    void* params[CUFORGE_JAX_PARAMS];
    void* data[CUFORGE_JAX_PARAMS];
    if (op->grid[0] == 0) return ffi::Error::Success();
    void* entry = platform == 0 ? __atomic_load_n(&op->cpu_entry, __ATOMIC_ACQUIRE)
                                : __atomic_load_n(&op->functions[device], __ATOMIC_ACQUIRE);
    if (entry == nullptr) {  // a device's first call (the op's tracing builds it for the default device)
        char message[CUFORGE_JAX_MESSAGE] = {0};
        if (resolve(const_cast<cuforge_jax_op*>(op), platform, device, message, sizeof message) != 0)
            return ffi::Error(ffi::ErrorCode::kInternal, message);
        entry = platform == 0 ? op->cpu_entry : op->functions[device];
    }
    ffi::Error bound = Bind(op, buffers, params, data);
    if (bound.failure()) return bound;
    if (platform == 0) {
        cuforge_cpu_launch L;
        std::memset(&L, 0, offsetof(cuforge_cpu_launch, message));
        std::memcpy(L.grid, op->grid, sizeof L.grid);
        std::memcpy(L.block, op->block, sizeof L.block);
        L.shared_mem = op->shared_mem;
        L.args = params;
        L.message[0] = 0;
        cpu_run(reinterpret_cast<cuforge_cpu_entry>(entry), &L);
        if (L.status != 0) return ffi::Error(ffi::ErrorCode::kInternal, L.message);
        return ffi::Error::Success();
    }
    int err = cu_launch(entry, op->grid[0], op->grid[1], op->grid[2], op->block[0], op->block[1], op->block[2],
                        static_cast<unsigned>(op->shared_mem), stream, params, nullptr);
    if (err != 0) {
        const char* name = "an unknown CUresult";
        if (cu_error_name != nullptr) cu_error_name(err, &name);
        return ffi::Error(ffi::ErrorCode::kInternal,
                          std::string("cuforge: cuLaunchKernel failed with ") + name + " (" + std::to_string(err) + ")");
    }
    return ffi::Error::Success();
}

// The address of buffer `index` (an operand, or -1 - j for result j).
struct Buffers {
    const ffi::RemainingArgs& args;
    const ffi::RemainingRets& rets;
    ffi::ErrorOr<void*> operator()(int index) const {
        if (index >= 0) {
            ffi::ErrorOr<ffi::AnyBuffer> b = args.get<ffi::AnyBuffer>(index);
            if (!b.has_value()) return ffi::Unexpected(b.error());
            return b->untyped_data();
        }
        ffi::ErrorOr<ffi::Result<ffi::AnyBuffer>> r = rets.get<ffi::AnyBuffer>(-1 - index);
        if (!r.has_value()) return ffi::Unexpected(r.error());
        return (*r)->untyped_data();
    }
};

ffi::Error RunCpu(ffi::RemainingArgs args, ffi::RemainingRets rets, uint64_t op, uint64_t token) {
    calls.fetch_add(1, std::memory_order_relaxed);
    if (token != process_token) return Stale();
    return Launch(reinterpret_cast<const cuforge_jax_op*>(op), 0, 0, Buffers{args, rets}, nullptr);
}

ffi::Error RunCuda(CUstream stream, int32_t device, ffi::RemainingArgs args, ffi::RemainingRets rets, uint64_t op,
                   uint64_t token) {
    calls.fetch_add(1, std::memory_order_relaxed);
    if (token != process_token) return Stale();
    if (device < 0 || device >= CUFORGE_JAX_DEVICES)
        return ffi::Error(ffi::ErrorCode::kUnimplemented, "cuforge: a device ordinal of 64 or more");
    if (cu_launch == nullptr)
        return ffi::Error(ffi::ErrorCode::kFailedPrecondition, "cuforge: the CUDA driver was not found by cuforge");
    return Launch(reinterpret_cast<const cuforge_jax_op*>(op), 1, device, Buffers{args, rets}, stream);
}

}  // namespace

CUFORGE_JAX_EXPORT void cuforge_jax_setup(uint64_t token, cuforge_jax_resolve resolver, cuforge_jax_cpu_run run,
                                          cuforge_jax_launch launch, cuforge_jax_error_name error_name) {
    process_token = token;
    resolve = resolver;
    cpu_run = run;
    cu_launch = launch;
    cu_error_name = error_name;
}

CUFORGE_JAX_EXPORT unsigned long long cuforge_jax_calls(void) { return calls.load(std::memory_order_relaxed); }

CUFORGE_JAX_EXPORT int cuforge_jax_limits(int which) {
    return which == 0 ? CUFORGE_JAX_DEVICES : which == 1 ? CUFORGE_JAX_PARAMS : (int)sizeof(cuforge_jax_op);
}

// The attributes are named so that they sort in this order (XLA passes them sorted by name).
CUFORGE_JAX_EXPORT XLA_FFI_Error* cuforge_jax_cpu(XLA_FFI_CallFrame* frame);
XLA_FFI_DEFINE_HANDLER_SYMBOL(cuforge_jax_cpu, RunCpu,
                              ffi::Ffi::Bind()
                                  .RemainingArgs()
                                  .RemainingRets()
                                  .Attr<uint64_t>("cuforge_op")
                                  .Attr<uint64_t>("cuforge_token"));

// Command-buffer compatible: a call launches one kernel on XLA's stream and does nothing else on
// the host once the device's kernel is loaded (the op's tracing loads it), so XLA may capture it in
// a CUDA graph and replay it without calling the handler.
CUFORGE_JAX_EXPORT XLA_FFI_Error* cuforge_jax_cuda(XLA_FFI_CallFrame* frame);
XLA_FFI_DEFINE_HANDLER_SYMBOL(cuforge_jax_cuda, RunCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .RemainingArgs()
                                  .RemainingRets()
                                  .Attr<uint64_t>("cuforge_op")
                                  .Attr<uint64_t>("cuforge_token"),
                              {ffi::Traits::kCmdBufferCompatible});
