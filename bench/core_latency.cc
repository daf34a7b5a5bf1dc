#include "bench/core_latency.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"

namespace kvcheck::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRounds = 5;
constexpr int64_t kRoundTrips = 20000;
constexpr auto kRoundLimit = std::chrono::seconds(1);

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// The turn counter on a line of its own, so that nothing else the threads touch shares it.
struct alignas(64) Turn {
  std::atomic<int64_t> value{0};
};

// Waits until `turn` reads `want`, or until `deadline`; false on the deadline. The clock is
// read every 1024 spins only: it would cost more than the hand-over being timed.
bool WaitFor(const Turn& turn, int64_t want, Clock::time_point deadline) {
  for (int spins = 0;; ++spins) {
    if (turn.value.load(std::memory_order_acquire) == want) return true;
    if ((spins & 1023) == 1023 && Clock::now() > deadline) return false;
  }
}

// One round on threads pinned to cpu_a (the timer) and cpu_b (the echo): the one-way time in
// nanoseconds, or a negative value when a thread could not be pinned or the round timed out.
double Round(int cpu_a, int cpu_b) {
  Turn turn;
  std::atomic<bool> echo_ok{true};
  const Clock::time_point deadline = Clock::now() + kRoundLimit;
  std::thread echo([&] {
    if (!PinTo(cpu_b)) {
      echo_ok = false;
      turn.value.store(-1, std::memory_order_release);
      return;
    }
    for (int64_t i = 0; i < kRoundTrips; ++i) {
      if (!WaitFor(turn, 2 * i + 1, deadline)) {
        echo_ok = false;
        return;
      }
      turn.value.store(2 * i + 2, std::memory_order_release);
    }
  });
  double nanoseconds = -1;
  std::thread timer([&] {
    if (!PinTo(cpu_a)) return;
    // One trip first, so that both threads are running on their CPUs before the clock starts.
    turn.value.store(1, std::memory_order_release);
    if (!WaitFor(turn, 2, deadline)) return;
    const Clock::time_point start = Clock::now();
    for (int64_t i = 1; i < kRoundTrips; ++i) {
      turn.value.store(2 * i + 1, std::memory_order_release);
      if (!WaitFor(turn, 2 * i + 2, deadline)) return;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    nanoseconds = seconds * 1e9 / (2.0 * static_cast<double>(kRoundTrips - 1));
  });
  timer.join();
  // A timer that gave up (pinning failed, or a deadline) leaves the echo waiting until the
  // deadline at most.
  echo.join();
  return echo_ok ? nanoseconds : -1;
}

}  // namespace

std::optional<double> CoreToCoreNanoseconds(int cpu_a, int cpu_b) {
  if (cpu_a == cpu_b || cpu_a < 0 || cpu_b < 0 || cpu_a >= CPU_SETSIZE || cpu_b >= CPU_SETSIZE) {
    return std::nullopt;
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || !CPU_ISSET(cpu_a, &allowed) ||
      !CPU_ISSET(cpu_b, &allowed)) {
    return std::nullopt;
  }
  double rounds[kRounds];
  for (double& round : rounds) {
    round = Round(cpu_a, cpu_b);
    if (round < 0) return std::nullopt;
  }
  std::sort(rounds, rounds + kRounds);
  return rounds[kRounds / 2];
}

std::vector<int> AllowedCpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  return cpus;
}

std::string FirstTwoCpusHandOver() {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.empty()) return "not measured (no CPU set)";
  if (cpus.size() < 2) return "not measured (one CPU allowed)";
  const std::optional<double> nanoseconds = CoreToCoreNanoseconds(cpus[0], cpus[1]);
  if (!nanoseconds.has_value()) {
    return absl::StrFormat("not measured (CPUs %d and %d did not answer)", cpus[0], cpus[1]);
  }
  return absl::StrFormat("CPUs %d and %d: %.0f ns one way", cpus[0], cpus[1], *nanoseconds);
}

}  // namespace kvcheck::bench
