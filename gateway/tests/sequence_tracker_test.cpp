#include <gtest/gtest.h>

#include "pipeline/sequence_tracker.hpp"

using namespace itchbench;

TEST(SequenceTracker, InOrderStreamHasNoEvents) {
  SequenceTracker t;
  EXPECT_EQ(t.on_packet(1, 3), 0u);
  EXPECT_EQ(t.on_packet(4, 1), 0u);
  EXPECT_EQ(t.on_packet(5, 0), 0u);  // heartbeat at the expected sequence
  EXPECT_EQ(t.expected(), 5u);
  EXPECT_EQ(t.counters().gap_events, 0u);
  EXPECT_EQ(t.counters().duplicate_messages, 0u);
}

TEST(SequenceTracker, JoinsMidSessionWithoutAGap) {
  SequenceTracker t;
  EXPECT_EQ(t.on_packet(1000, 2), 0u);
  EXPECT_EQ(t.counters().gap_messages, 0u);
  EXPECT_EQ(t.expected(), 1002u);
}

TEST(SequenceTracker, GapDuplicateAndReorder) {
  SequenceTracker t;
  t.on_packet(1, 2);                   // 1,2
  EXPECT_EQ(t.on_packet(6, 2), 0u);    // 3,4,5 missing
  EXPECT_EQ(t.counters().gap_events, 1u);
  EXPECT_EQ(t.counters().gap_messages, 3u);
  EXPECT_EQ(t.on_packet(4, 1), 1u);    // late: fills the gap, not applied
  EXPECT_EQ(t.counters().reordered_messages, 1u);
  EXPECT_EQ(t.on_packet(4, 1), 1u);    // again: now a duplicate
  EXPECT_EQ(t.counters().duplicate_messages, 1u);
  EXPECT_EQ(t.on_packet(1, 2), 2u);    // old packet: duplicates
  EXPECT_EQ(t.counters().duplicate_messages, 3u);
  EXPECT_EQ(t.counters().missing_messages(), 2u);  // 3 and 5 never came
  EXPECT_EQ(t.on_packet(3, 1), 1u);
  EXPECT_EQ(t.on_packet(5, 1), 1u);
  EXPECT_EQ(t.counters().missing_messages(), 0u);
}

TEST(SequenceTracker, PartialOverlapAppliesOnlyTheNewTail) {
  SequenceTracker t;
  t.on_packet(1, 3);                   // 1..3
  EXPECT_EQ(t.on_packet(2, 4), 2u);    // 2,3 duplicate; 4,5 new
  EXPECT_EQ(t.expected(), 6u);
  EXPECT_EQ(t.counters().duplicate_messages, 2u);
}

TEST(SequenceTracker, HeartbeatRevealsTailGap) {
  SequenceTracker t;
  t.on_packet(1, 1);
  t.on_packet(5, 0);  // heartbeat says the next is 5: 2,3,4 lost
  EXPECT_EQ(t.counters().gap_messages, 3u);
  EXPECT_EQ(t.expected(), 5u);
}
