// Per-rank figures of a multi-process run: each rank's row (status, memory breakdown, device vs
// host pool, communication), collected by rank 0 through the c10d store into the result JSON's
// "ranks" array (stored in the run_ranks table, docs/results.md), and the merge the local
// launcher does when a rank failed.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/comm/process_group.h"
#include "core/launch/rank_launcher.h"
#include "core/train/run_result.h"

namespace memsweep::dist {

nlohmann::json RankRow(const train::RunResult& result);

// Every rank publishes its row; rank 0 waits for all of them and stores them, in rank order, as
// result["ranks"]. The ranks meet at a barrier afterwards so that rank 0's store outlives the
// reads.
void CollectRankRows(ProcessGroup& group, const train::RunResult& mine, nlohmann::json& result);

// Where rank r (> 0) of a locally launched run leaves its own result JSON.
std::string RankResultPath(const std::string& result_path, int rank);

// The cell's result after a group in which some rank failed: status "oom" when a rank ran out of
// its budget (that rank's message first), else "failed"; the error lists every failed rank.
// `rank_results` holds what each rank wrote (null where nothing was written).
nlohmann::json MergeFailedGroup(const std::vector<RankExit>& exits,
                                const std::vector<nlohmann::json>& rank_results,
                                nlohmann::json base);

}  // namespace memsweep::dist
