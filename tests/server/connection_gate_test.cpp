// Who holds a request thread (issue 38): the per-client and total caps, and heads still
// arriving asked to leave, oldest first, only while connections wait for a thread.
#include <gtest/gtest.h>

#include <thread>

#include "connection_gate.h"

namespace cflow::server {
namespace {

using namespace std::chrono_literals;

TEST(ConnectionGate, CapsConnectionsPerClientAndInAll) {
    ConnectionGate gate(2, 3, 0ms);
    uint64_t a1 = 0, a2 = 0, b1 = 0, unused = 0;
    EXPECT_EQ(gate.admit("10.0.0.1", a1), ConnectionGate::Admission::Admitted);
    EXPECT_EQ(gate.admit("10.0.0.1", a2), ConnectionGate::Admission::Admitted);
    EXPECT_EQ(gate.admit("10.0.0.1", unused), ConnectionGate::Admission::ClientOverLimit);
    EXPECT_EQ(gate.admit("10.0.0.2", b1), ConnectionGate::Admission::Admitted);
    EXPECT_EQ(gate.admit("10.0.0.3", unused), ConnectionGate::Admission::ServerFull);
    EXPECT_EQ(gate.open_connections(), 3u);
    gate.release(a1);
    EXPECT_EQ(gate.admit("10.0.0.1", a1), ConnectionGate::Admission::Admitted) << "a closed connection frees its place";
    gate.shut_down();
    gate.release(b1);
    EXPECT_EQ(gate.admit("10.0.0.4", unused), ConnectionGate::Admission::ShuttingDown);
}

TEST(ConnectionGate, MakesRoomOnlyForWaitingConnectionsAndOnlyFromSlowHeads) {
    ConnectionGate gate(100, 100, 50ms);
    uint64_t slow1 = 0, slow2 = 0, done = 0, fresh = 0;
    ASSERT_EQ(gate.admit("a", slow1), ConnectionGate::Admission::Admitted);
    ASSERT_EQ(gate.admit("a", slow2), ConnectionGate::Admission::Admitted);
    ASSERT_EQ(gate.admit("a", done), ConnectionGate::Admission::Admitted);
    gate.head_arrived(done);
    EXPECT_EQ(gate.make_room(), 0u) << "nobody waits for a thread";
    gate.set_waiting_for_thread(1);
    EXPECT_EQ(gate.make_room(), 0u) << "heads younger than 50 ms are not asked to leave";
    std::this_thread::sleep_for(60ms);
    ASSERT_EQ(gate.admit("a", fresh), ConnectionGate::Admission::Admitted);
    EXPECT_EQ(gate.make_room(), 1u);
    EXPECT_TRUE(gate.asked_to_leave(slow1)) << "the oldest head goes first";
    EXPECT_FALSE(gate.asked_to_leave(slow2));
    EXPECT_FALSE(gate.asked_to_leave(done)) << "a connection past its head is never asked";
    EXPECT_FALSE(gate.asked_to_leave(fresh));
    EXPECT_EQ(gate.make_room(), 0u) << "one waiting connection, one already leaving";
    gate.set_waiting_for_thread(2);
    EXPECT_EQ(gate.make_room(), 1u);
    EXPECT_TRUE(gate.asked_to_leave(slow2));
    EXPECT_EQ(gate.evicted_total(), 2u);
    gate.release(slow1);
    gate.release(slow2);
    EXPECT_EQ(gate.heads_arriving(), 1u);
    gate.shut_down();
    EXPECT_TRUE(gate.asked_to_leave(fresh)) << "shutting down asks every head still arriving";
    EXPECT_FALSE(gate.asked_to_leave(done));
}

} // namespace
} // namespace cflow::server
