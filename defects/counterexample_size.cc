#include "defects/counterexample_size.h"

#include <algorithm>
#include <regex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvcheck::defects {
namespace {

// The first match of each pattern's group, as "label=value".
std::vector<std::string> Fields(const std::string& text,
                                const std::vector<std::pair<const char*, const char*>>& fields) {
  std::vector<std::string> out;
  for (const auto& [label, pattern] : fields) {
    std::smatch match;
    if (std::regex_search(text, match, std::regex(pattern))) {
      out.push_back(absl::StrCat(label, match[1].str()));
    }
  }
  return out;
}

}  // namespace

std::string CounterexampleSize(const std::string& text) {
  // A kernel case (properties/kernel_case.h).
  if (text.find("query rows Sq=") != std::string::npos) {
    return absl::StrJoin(Fields(text, {{"B=", R"(batch B=(\d+))"},
                                       {"H=", R"(query heads H=(\d+))"},
                                       {"KH=", R"(KV heads KH=(\d+))"},
                                       {"Sq=", R"(query rows Sq=(\d+))"},
                                       {"Skv=", R"(keys Skv=(\d+))"},
                                       {"D=", R"(head dim D=(\d+))"}}),
                         " ");
  }
  // A cache command sequence: the commands, and the largest B, KH, D and S they use.
  static const std::regex kCommand(
      R"(\n\s*(Prefill|Decode|Grow|Attend|Reset|Fork|BadAppend)\()");
  const auto begin = std::sregex_iterator(text.begin(), text.end(), kCommand);
  const int64_t commands = std::distance(begin, std::sregex_iterator());
  if (commands > 0) {
    int64_t largest[4] = {0, 0, 0, 0};
    const char* const names[] = {"B", "KH", "D", "S"};
    for (int i = 0; i < 4; ++i) {
      const std::regex field(absl::StrCat(R"(\b)", names[i], R"(=(\d+))"));
      for (auto m = std::sregex_iterator(text.begin(), text.end(), field);
           m != std::sregex_iterator(); ++m) {
        largest[i] = std::max<int64_t>(largest[i], std::stoll((*m)[1].str()));
      }
    }
    return absl::StrCat(commands, commands == 1 ? " command" : " commands", ", largest B=",
                        largest[0], " KH=", largest[1], " D=", largest[2], " S=", largest[3]);
  }
  // A generation case (properties/generation_properties.cc).
  std::smatch decoder;
  if (std::regex_search(text, decoder, std::regex(R"((gpt2|llama) V=\d+ C=\d+ W=\d+ (L=\d+ H=\d+ KH=\d+))"))) {
    std::vector<std::string> parts = {absl::StrCat(decoder[1].str(), " ", decoder[2].str())};
    std::smatch prompt;
    if (std::regex_search(text, prompt, std::regex(R"(prompt \[([^\]]*)\], (\d+) new tokens)"))) {
      const std::string tokens = prompt[1].str();
      parts.push_back(absl::StrCat(
          "prompt ", tokens.empty() ? 0 : std::count(tokens.begin(), tokens.end(), ',') + 1));
      parts.push_back(absl::StrCat(prompt[2].str(), " new tokens"));
    }
    return absl::StrJoin(parts, ", ");
  }
  // A growth-law case (properties/cache_properties.cc).
  std::smatch appends;
  if (std::regex_search(text, appends, std::regex(R"((\d+) appends of (\d+) tokens)"))) {
    return absl::StrCat(appends[1].str(), " appends, ", appends[2].str(), " tokens");
  }
  return "";
}

}  // namespace kvcheck::defects
