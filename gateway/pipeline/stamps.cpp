#include "pipeline/stamps.hpp"

#include <sstream>
#include <stdexcept>

namespace itchbench {

uint8_t parse_stamps(const std::string& text) {
  if (text == "all") return kAllStamps;
  uint8_t mask = 0;
  std::stringstream ss(text);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name == "read") mask |= kStampRead;
    else if (name == "decoded") mask |= kStampDecoded;
    else if (name == "book") mask |= kStampBook;
    else if (name == "published") mask |= kStampPublished;
    else
      throw std::invalid_argument("stamps: unknown stage '" + name + "' (stages: read, decoded, book, published; or all)");
  }
  if (!mask) throw std::invalid_argument("stamps: name at least one stage (read, decoded, book, published) or all");
  return mask;
}

}  // namespace itchbench
