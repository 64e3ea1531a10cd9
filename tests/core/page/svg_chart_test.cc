// The report's chart primitives: axis ticks, units, escaping, and what a chart leaves out.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/page/svg_chart.h"
#include "support/html_tables.h"

namespace {

using namespace memsweep::page;
using memsweep::testing_support::Count;

TEST(SvgChartTest, TicksAreRoundAndCoverTheRange) {
  for (auto [low, high] : {std::pair{0.0, 1.0}, {0.0, 57673480.0 / 1048576}, {-1.0, 30.0},
                           {3.1, 6.3}, {0.0, 0.004}, {1e-3, 1e5}}) {
    const std::vector<double> ticks = NiceTicks(low, high, 5);
    ASSERT_GE(ticks.size(), 2u) << low << " " << high;
    EXPECT_LE(ticks.front(), low);
    EXPECT_GE(ticks.back(), high * (1 - 1e-12));
    EXPECT_LE(ticks.size(), 12u);
    const double step = ticks[1] - ticks[0];
    for (size_t i = 1; i < ticks.size(); ++i) {
      EXPECT_NEAR(ticks[i] - ticks[i - 1], step, step * 1e-9);
    }
    // 1, 2, 2.5 or 5 times a power of ten.
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 ||
                std::abs(mantissa - 2.5) < 1e-9 || std::abs(mantissa - 5) < 1e-9)
        << step;
  }
}

TEST(SvgChartTest, ValuesAreWrittenInTheirUnits) {
  EXPECT_EQ(FormatValue(57673480, Unit::kBytes), "55.00 MiB");
  EXPECT_EQ(FormatValue(0.173, Unit::kRatio), "0.173x");
  EXPECT_EQ(FormatValue(15181.25, Unit::kNumber), "15181.2");
  EXPECT_EQ(Escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
}

TEST(SvgChartTest, StackedBarsDrawEachPositivePartAndNameTheirUnit) {
  BarChart chart{.id = "c", .title = "t <1>", .value_label = "Peak", .value_unit = Unit::kBytes};
  chart.categories = {"cell 0", "cell 1"};
  chart.series = {{"a", {1 << 20, 2 << 20}}, {"b", {0.0, std::nullopt}}, {"c", {3 << 20, 1 << 20}}};
  chart.beside = BarSeries{"reserved", {4 << 20, std::nullopt}};
  chart.lines = {{"budget", 6 << 20}};
  const std::string svg = DrawStackedBars(chart);
  EXPECT_EQ(Count(svg, "class=\"mark"), 5u);  // a, c twice; one reserved bar
  EXPECT_NE(svg.find("Peak (MiB)"), std::string::npos);
  EXPECT_NE(svg.find("t &lt;1&gt;"), std::string::npos);
  EXPECT_NE(svg.find("budget 6.00 MiB"), std::string::npos);
  EXPECT_EQ(Count(svg, "class=\"limit\""), 1u);
  // A budget far above every bar would flatten them: the legend names it instead.
  chart.lines = {{"budget", 8.0 * (1 << 30)}};
  const std::string off = DrawStackedBars(chart);
  EXPECT_EQ(Count(off, "class=\"limit\""), 0u);
  EXPECT_NE(off.find(">budget 8.00 GiB (off the</text>"), std::string::npos);  // on two lines
  EXPECT_NE(off.find("Peak (MiB)"), std::string::npos);
  // A striped series: one pattern of the chart's own, its bars and legend box filled with it.
  chart.series[2].hatched = true;
  const std::string striped = DrawStackedBars(chart);
  EXPECT_EQ(Count(striped, "<pattern id=\"c-hatch2\""), 1u);
  EXPECT_EQ(Count(striped, "fill=\"url(#c-hatch2)\""), 3u);  // two bars, the legend
}

TEST(SvgChartTest, SeriesAfterTheFourthStartHiddenAndTheirLegendSaysSo) {
  LineChart chart{.id = "l", .title = "t", .x_label = "step", .y_label = "Loss",
                  .hidden_by_default_after_four = true};
  for (int s = 0; s < 6; ++s) {
    chart.series.push_back({.name = "cell " + std::to_string(s),
                            .points = {{0, 1.0 * s}, {1, 2.0 * s}},
                            .group = "run" + std::to_string(s)});
  }
  const std::string svg = DrawLines(chart);
  EXPECT_EQ(Count(svg, "<polyline class=\"mark\""), 6u);
  EXPECT_EQ(Count(svg, "<g class=\"series off\""), 2u);
  EXPECT_EQ(Count(svg, "<g class=\"legend-entry off\" data-series=\"run"), 2u);
}

TEST(SvgChartTest, LongCategoryNamesSlantAndTheChartGrowsForThem) {
  BarChart chart{.id = "g", .title = "t", .value_label = "Ratio", .value_unit = Unit::kRatio};
  chart.series = {{"peak", {}}};
  for (int i = 0; i < 12; ++i) {
    chart.categories.push_back("strategies.batching.micro_batch_size=" + std::to_string(i));
    chart.series[0].values.push_back(1.0 + i);
  }
  const std::string svg = DrawGroupedBars(chart);
  EXPECT_NE(svg.find("rotate(-40"), std::string::npos);
  EXPECT_NE(svg.find("height=\"416\""), std::string::npos);  // 360 + room for the names
  EXPECT_NE(svg.find("<title>strategies.batching.micro_batch_size=11</title>"), std::string::npos);
}

}  // namespace
