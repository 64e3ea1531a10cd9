#include "core/launch/rank_results.h"

#include "core/train/result_fields.h"

namespace memsweep::dist {

nlohmann::json RankRow(const train::RunResult& r) {
  nlohmann::json row = {{"rank", r.dist.rank},
                        {"status", train::RunStatusName(r.status)},
                        {"error", r.error},
                        {"steps_completed", static_cast<int64_t>(r.steps.size())}};
  row.update(train::FieldsToJson(r.memory, train::MemoryFields(), train::kRankRow));
  row.update(train::FieldsToJson(r.dist, train::RankFigureFields(), train::kRankRow));
  return row;
}

void CollectRankRows(ProcessGroup& group, const train::RunResult& mine, nlohmann::json& result) {
  group.Set("rank_row/" + std::to_string(group.Rank()), RankRow(mine).dump());
  if (group.Rank() == 0) {
    nlohmann::json rows = nlohmann::json::array();
    for (int r = 0; r < group.WorldSize(); ++r) {
      rows.push_back(nlohmann::json::parse(group.Get("rank_row/" + std::to_string(r))));
    }
    result["ranks"] = rows;
  }
  group.Set("rank_row_read/" + std::to_string(group.Rank()), "1");
  if (group.Rank() == 0) {
    for (int r = 0; r < group.WorldSize(); ++r) group.Get("rank_row_read/" + std::to_string(r));
  }
}

std::string RankResultPath(const std::string& result_path, int rank) {
  return result_path + ".rank" + std::to_string(rank);
}

nlohmann::json MergeFailedGroup(const std::vector<RankExit>& exits,
                                const std::vector<nlohmann::json>& rank_results,
                                nlohmann::json base) {
  std::string oom_message;
  nlohmann::json oom_result;
  nlohmann::json rows = nlohmann::json::array();
  for (size_t r = 0; r < rank_results.size(); ++r) {
    const nlohmann::json& result = rank_results[r];
    if (result.is_null()) continue;
    if (result.value("status", "") == "oom" && oom_message.empty()) {
      oom_message = "rank " + std::to_string(r) + ": " + result.value("error", "");
      oom_result = result;
    }
  }
  std::string error = DescribeFailures(exits);
  if (!oom_message.empty()) {
    nlohmann::json merged = oom_result;
    merged["status"] = "oom";
    merged["error"] = error.empty() ? oom_message : oom_message + "\n" + error;
    return merged;
  }
  base["status"] = "failed";
  base["error"] = error.empty() ? "a rank failed without a message" : error;
  return base;
}

}  // namespace memsweep::dist
