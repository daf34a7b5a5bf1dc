// fuzz_campaign_report ROUNDS DIR [DEFECT]: the reports of a fuzzing campaign (fuzz_campaign.h)
// from the per-round lines tools/fuzz.sh wrote to ROUNDS, into DIR; prints the Markdown.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "report/fuzz_campaign.h"

int main(int argc, char** argv) {
  using kvcheck::report::FuzzCampaign;
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: fuzz_campaign_report ROUNDS.tsv OUT_DIR [DEFECT]\n");
    return 3;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "fuzz_campaign_report: cannot read %s\n", argv[1]);
    return 3;
  }
  absl::StatusOr<std::vector<kvcheck::report::FuzzRound>> rounds =
      kvcheck::report::ParseFuzzRounds(text.str());
  if (!rounds.ok()) {
    std::fprintf(stderr, "fuzz_campaign_report: %s: %s\n", argv[1],
                 std::string(rounds.status().message()).c_str());
    return 3;
  }
  FuzzCampaign campaign;
  char started[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc;
  gmtime_r(&now, &utc);
  std::strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &utc);
  campaign.started = started;
  campaign.machine = kvcheck::report::ThisMachine();
  campaign.defect = argc == 4 ? argv[3] : "";
  campaign.rounds = *std::move(rounds);
  if (absl::Status written = kvcheck::report::WriteFuzzCampaignFiles(campaign, argv[2]);
      !written.ok()) {
    std::fprintf(stderr, "fuzz_campaign_report: %s\n", std::string(written.message()).c_str());
    return 3;
  }
  std::printf("%s", kvcheck::report::FuzzCampaignMarkdown(campaign).c_str());
  return 0;
}
