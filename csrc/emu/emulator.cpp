// The scheduler behind emu/cuda_emu.h, and the Python module morphaug._C_emu:
// the schemas of torch.ops.morphaug_emu (whose CPU kernels are the CUDA
// launchers of csrc/cuda compiled as host C++), the thread order, and the
// launch counts per kernel.
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/mman.h>
#include <torch/library.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "../schemas.h"
#include "cuda_emu.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

TORCH_LIBRARY(morphaug_emu, m) { morphaug::define_schemas(m); }

namespace morphaug {
namespace emu {
namespace {

// --- fibers ----------------------------------------------------------------

constexpr size_t kStackBytes = size_t{1} << 18;

#if defined(__x86_64__)
// Saves the callee-saved registers, MXCSR and the x87 control word on the
// current stack, stores the stack pointer in *from and resumes the stack `to`.
extern "C" void morphaug_emu_switch(void** from, void* to);
asm(R"(
  .text
  .p2align 4
  .type morphaug_emu_switch, @function
morphaug_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size morphaug_emu_switch, .-morphaug_emu_switch
)");

struct Context {
  void* sp = nullptr;
};

void start_context(Context& c, char* stack, size_t bytes, void (*entry)()) {
  uintptr_t top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t{15};
  auto* sp = reinterpret_cast<uint64_t*>(top);
  *--sp = 0;                                // entry's return address: it never returns
  *--sp = reinterpret_cast<uint64_t>(entry);  // where the switch's ret lands
  for (int r = 0; r < 6; ++r) *--sp = 0;    // rbp, rbx, r12 .. r15
  uint32_t mxcsr;
  uint16_t control;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(control));
  *--sp = (uint64_t{control} << 32) | mxcsr;
  c.sp = sp;
}

void switch_context(Context& from, Context& to) { morphaug_emu_switch(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc;
};

void start_context(Context& c, char* stack, size_t bytes, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}

void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

// --- the scheduler -----------------------------------------------------------

enum class Order { kForward, kReverse, kShuffle };

enum class State { kReady, kBlockBarrier, kWarpBarrier, kDone };

struct Fiber {
  Context context;
  State state = State::kReady;
  unsigned mask = 0;        // of the warp operation it waits in
  unsigned exchanges = 0;   // warp operations done: the parity picks the buffer
  uint3 index{0, 0, 0};
};

struct Settings {
  Order order = Order::kForward;
  uint64_t seed = 0;
};

struct Counts {
  int64_t launches = 0, blocks = 0, threads = 0;
};

std::mutex launch_mutex;  // one emulated launch at a time: the built-ins are globals
Settings settings;
std::map<std::string, Counts> counts;
std::set<std::string> names;

// The block being run.
struct Block {
  std::vector<Fiber> fibers;
  std::vector<char*> stacks;
  // [warp][parity][lane]: the lanes' contributions to a warp operation.
  std::vector<uint64_t> exchange;
  Context scheduler;
  int running = -1;
  void (*body)(void*) = nullptr;
  void* context = nullptr;
  std::string error;
  std::mt19937_64 random;
};

Block* block = nullptr;

std::vector<char*>& stack_pool() {
  static std::vector<char*> pool;
  return pool;
}

char* stack_for(size_t t) {
  std::vector<char*>& pool = stack_pool();
  while (pool.size() <= t) {
    void* memory = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    TORCH_CHECK(memory != MAP_FAILED, "morphaug_emu: cannot map a fiber stack");
    pool.push_back(static_cast<char*>(memory));
  }
  return pool[t];
}

void fiber_entry() {
  Block& b = *block;
  b.body(b.context);
  b.fibers[b.running].state = State::kDone;
  switch_context(b.fibers[b.running].context, b.scheduler);
}

// The running fiber waits in `state`; the scheduler resumes it later.
void suspend(State state) {
  Block& b = *block;
  Fiber& f = b.fibers[b.running];
  f.state = state;
  switch_context(f.context, b.scheduler);
}

// Stops the running thread for good, recording the launch's error.
[[noreturn]] void fail(const std::string& message) {
  Block& b = *block;
  if (b.error.empty()) b.error = message;
  suspend(State::kDone);
  __builtin_unreachable();
}

std::vector<int> order_of(std::vector<int> items, std::mt19937_64& random) {
  if (settings.order == Order::kReverse) std::reverse(items.begin(), items.end());
  if (settings.order == Order::kShuffle) std::shuffle(items.begin(), items.end(), random);
  return items;
}

unsigned linear_thread(const uint3& t) {
  return t.x + blockDim.x * (t.y + blockDim.y * t.z);
}

void resume(int t) {
  Block& b = *block;
  b.running = t;
  threadIdx = b.fibers[t].index;
  switch_context(b.scheduler, b.fibers[t].context);
  b.running = -1;
}

// Releases the barriers every waiting thread has reached; false when none.
bool release_barriers() {
  Block& b = *block;
  const int n = static_cast<int>(b.fibers.size());
  bool all_at_block = true, any_at_block = false;
  for (const Fiber& f : b.fibers) {
    if (f.state == State::kDone) continue;
    all_at_block = all_at_block && f.state == State::kBlockBarrier;
    any_at_block = any_at_block || f.state == State::kBlockBarrier;
  }
  if (all_at_block && any_at_block) {
    for (Fiber& f : b.fibers) {
      if (f.state == State::kBlockBarrier) f.state = State::kReady;
    }
    return true;
  }
  bool released = false;
  for (int warp = 0; warp * 32 < n; ++warp) {
    unsigned waiting = 0, mask = 0;
    for (int l = 0; l < 32 && warp * 32 + l < n; ++l) {
      const Fiber& f = b.fibers[warp * 32 + l];
      if (f.state != State::kWarpBarrier) continue;
      waiting |= 1u << l;
      mask = f.mask;
    }
    if (waiting == 0 || (waiting & mask) != mask) continue;
    for (int l = 0; l < 32; ++l) {
      if (mask >> l & 1u) b.fibers[warp * 32 + l].state = State::kReady;
    }
    released = true;
  }
  return released;
}

std::string describe_deadlock() {
  const Block& b = *block;
  int at_block = 0, at_warp = 0, done = 0;
  for (const Fiber& f : b.fibers) {
    at_block += f.state == State::kBlockBarrier;
    at_warp += f.state == State::kWarpBarrier;
    done += f.state == State::kDone;
  }
  return "deadlock in block (" + std::to_string(blockIdx.x) + ", " + std::to_string(blockIdx.y) +
         ", " + std::to_string(blockIdx.z) + "): " + std::to_string(at_block) +
         " threads wait at __syncthreads, " + std::to_string(at_warp) +
         " in a warp operation whose mask names lanes that never reach it, " +
         std::to_string(done) + " have returned";
}

void run_block(Block& b) {
  const int n = static_cast<int>(b.fibers.size());
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  for (int t = 0; t < n; ++t) {
    Fiber& f = b.fibers[t];
    f = Fiber{};
    f.index = uint3{t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y)};
    start_context(f.context, b.stacks[t], kStackBytes, &fiber_entry);
  }
  for (;;) {
    bool ran = false;
    for (const int t : order_of(all, b.random)) {
      if (b.fibers[t].state != State::kReady) continue;
      resume(t);
      ran = true;
      if (!b.error.empty()) return;  // the other threads are dropped mid-way
    }
    if (ran) continue;  // threads handed back at an atomic are ready again
    if (std::all_of(b.fibers.begin(), b.fibers.end(),
                    [](const Fiber& f) { return f.state == State::kDone; })) {
      return;
    }
    if (!release_barriers()) {
      b.error = describe_deadlock();
      return;
    }
  }
}

std::string check_configuration(dim3 grid, dim3 block_shape) {
  const uint64_t threads = uint64_t{block_shape.x} * block_shape.y * block_shape.z;
  if (threads == 0 || threads > 1024 || block_shape.z > 64) {
    return "invalid block (" + std::to_string(block_shape.x) + ", " + std::to_string(block_shape.y) +
           ", " + std::to_string(block_shape.z) + "): 1 to 1024 threads, z at most 64";
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 ||
      grid.z > 65535) {
    return "invalid grid (" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
           std::to_string(grid.z) + "): x 1 to 2^31 - 1, y and z 1 to 65535";
  }
  return "";
}

}  // namespace

const char* intern_kernel_name(const char* source, const char* pretty_function) {
  // GCC / Clang: "... kernel_name(const char*) [with auto Kernel = <name>...]"
  std::string text(pretty_function);
  const size_t at = text.find("Kernel = ");
  std::string name = at == std::string::npos ? text : text.substr(at + 9);
  name = name.substr(name.find_first_not_of("(& "));
  name = name.substr(0, name.find_first_of("<;]("));
  const size_t scope = name.rfind("::");
  if (scope != std::string::npos) name = name.substr(scope + 2);
  const std::lock_guard<std::mutex> lock(launch_mutex);
  return names.insert(std::string(source) + ":" + name).first->c_str();
}

void run_grid(const char* name, dim3 grid, dim3 block_shape, void (*body)(void*), void* context) {
  const std::lock_guard<std::mutex> lock(launch_mutex);
  const std::string bad = check_configuration(grid, block_shape);
  TORCH_CHECK(bad.empty(), "morphaug_emu: launch of ", name, ": ", bad);
  Block b;
  const size_t threads = size_t{block_shape.x} * block_shape.y * block_shape.z;
  b.fibers.resize(threads);
  for (size_t t = 0; t < threads; ++t) b.stacks.push_back(stack_for(t));
  b.exchange.assign((threads + 31) / 32 * 2 * 32, 0);
  b.body = body;
  b.context = context;
  Counts& c = counts[name];
  b.random.seed(settings.seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(c.launches + 1));
  blockDim = block_shape;
  gridDim = grid;
  const int64_t blocks = int64_t{grid.x} * grid.y * grid.z;
  std::vector<int> order(static_cast<size_t>(blocks));
  std::iota(order.begin(), order.end(), 0);
  block = &b;
  for (const int64_t linear : order_of(order, b.random)) {
    blockIdx = uint3{static_cast<unsigned>(linear % grid.x),
                     static_cast<unsigned>(linear / grid.x % grid.y),
                     static_cast<unsigned>(linear / (int64_t{grid.x} * grid.y))};
    run_block(b);
    if (!b.error.empty()) break;
  }
  block = nullptr;
  ++c.launches;
  c.blocks += blocks;
  c.threads += blocks * static_cast<int64_t>(threads);
  TORCH_CHECK(b.error.empty(), "morphaug_emu: kernel ", name, ": ", b.error);
}

void block_barrier() {
  TORCH_CHECK(block && block->running >= 0, "morphaug_emu: __syncthreads outside a kernel");
  suspend(State::kBlockBarrier);
}

unsigned lane() { return linear_thread(threadIdx) % 32; }

const uint64_t* warp_exchange(unsigned mask, const void* value, size_t size) {
  Block& b = *block;
  Fiber& f = b.fibers[b.running];
  const unsigned me = linear_thread(threadIdx), warp = me / 32, l = me % 32;
  const size_t threads = b.fibers.size();
  if (!(mask >> l & 1u)) fail("lane " + std::to_string(l) + " runs a warp operation its mask excludes");
  for (unsigned other = 0; other < 32; ++other) {
    if ((mask >> other & 1u) && warp * 32 + other >= threads) {
      fail("a warp operation's mask names lane " + std::to_string(other) + " of warp " +
           std::to_string(warp) + ", which the block of " + std::to_string(threads) +
           " threads does not have");
    }
  }
  uint64_t* slots = &b.exchange[(warp * 2 + f.exchanges % 2) * 32];
  slots[l] = 0;
  std::memcpy(&slots[l], value, size);
  ++f.exchanges;
  f.mask = mask;
  suspend(State::kWarpBarrier);
  return slots;
}

void preemption_point() {
  Block& b = *block;
  if (settings.order == Order::kShuffle && b.random() % 2 == 0) suspend(State::kReady);
}

}  // namespace emu
}  // namespace morphaug

namespace {

void set_order(const std::string& order, uint64_t seed) {
  using morphaug::emu::Order;
  static const std::map<std::string, Order> orders{
      {"forward", Order::kForward}, {"reverse", Order::kReverse}, {"shuffle", Order::kShuffle}};
  const auto found = orders.find(order);
  TORCH_CHECK(found != orders.end(), "morphaug_emu: order must be 'forward', 'reverse' or "
              "'shuffle', got '", order, "'");
  const std::lock_guard<std::mutex> lock(morphaug::emu::launch_mutex);
  morphaug::emu::settings = {found->second, seed};
}

std::tuple<std::string, uint64_t> get_order() {
  static const char* names[] = {"forward", "reverse", "shuffle"};
  const std::lock_guard<std::mutex> lock(morphaug::emu::launch_mutex);
  return {names[static_cast<int>(morphaug::emu::settings.order)], morphaug::emu::settings.seed};
}

std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> launch_counts() {
  const std::lock_guard<std::mutex> lock(morphaug::emu::launch_mutex);
  std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> result;
  for (const auto& [name, c] : morphaug::emu::counts) result[name] = {c.launches, c.blocks, c.threads};
  return result;
}

}  // namespace

PYBIND11_MODULE(_C_emu, m) {
  m.doc() = "morphaug's CUDA launchers run on the CPU by an emulator of CUDA's execution model "
            "(test-only): ops in torch.ops.morphaug_emu";
  m.def("set_order", &set_order, pybind11::arg("order"), pybind11::arg("seed") = 0,
        "Order of blocks and of threads between barriers: 'forward', 'reverse' or 'shuffle' "
        "(seeded).");
  m.def("get_order", &get_order, "The current (order, seed).");
  m.def("launch_counts", &launch_counts,
        "{'file.cu:kernel': (launches, blocks, threads)} since the module was loaded.");
}
