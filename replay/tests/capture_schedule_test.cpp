#include "replay/lib/capture_schedule.hpp"

#include <gtest/gtest.h>

using itchbench::replay::CaptureSchedule;

TEST(CaptureSchedule, OffsetsFromTheFirstStampDividedByTheMultiplier) {
  CaptureSchedule s(2.0);
  EXPECT_EQ(s.due(1'000'000), 0u);
  EXPECT_EQ(s.due(3'000'000), 1'000'000u);
  EXPECT_EQ(s.due(9'000'000), 4'000'000u);
  EXPECT_EQ(s.backwards_steps(), 0u);
}

TEST(CaptureSchedule, AStampThatGoesBackIsDueAtOnceAndCounted) {
  CaptureSchedule s(1.0);
  EXPECT_EQ(s.due(5'000), 0u);
  EXPECT_EQ(s.due(8'000), 3'000u);
  EXPECT_EQ(s.due(0), 3'000u);  // earlier than the start: no underflow
  EXPECT_EQ(s.due(7'000), 3'000u);
  EXPECT_EQ(s.due(10'000), 5'000u);  // later stamps keep their spacing from the start
  EXPECT_EQ(s.backwards_steps(), 2u);
}
