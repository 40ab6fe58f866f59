#include <gtest/gtest.h>

#include <stdexcept>

#include "pipeline/stamps.hpp"

using namespace itchbench;

TEST(Stamps, ParsesNamesAndRefusesTheRest) {
  EXPECT_EQ(parse_stamps("all"), kStampRead | kStampDecoded | kStampBook | kStampPublished);
  EXPECT_EQ(parse_stamps("book"), kStampBook);
  EXPECT_EQ(parse_stamps("read,book"), kStampRead | kStampBook);
  EXPECT_EQ(parse_stamps("published,decoded"), kStampPublished | kStampDecoded);
  for (const char* bad : {"", "books", "read,,book", "READ", "all,book"})
    EXPECT_THROW(parse_stamps(bad), std::invalid_argument) << bad;
}
