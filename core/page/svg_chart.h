// SVG charts for the HTML report (memsweep report): bars (stacked, floating, grouped), lines and
// points, drawn by memsweep as inline SVG text — no script library, so the page is readable with
// scripts off, renders the same in every browser and has nothing to fetch.
//
// Every mark a chart draws for data (a bar segment, a point, a line) carries class "mark", so a
// test can count them; every axis says its unit.
//
//   BarChart chart{.title = "Peak memory by cell", .value_unit = Unit::kBytes};
//   chart.categories = {"cell 0", "cell 1"};
//   chart.series = {{"parameters", {1e6, 1e6}}, {"activations", {3e6, 9e6}}};
//   std::string svg = DrawStackedBars(chart);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::page {

enum class Unit : uint8_t {
  kBytes,   // binary units on the axis (KiB, MiB, GiB), chosen from the axis range
  kNumber,  // plain numbers (tokens/s, loss, steps); the unit goes into the axis label
  kRatio,   // "x" ratios (1 = the baseline)
};

// Colours whose grey values differ (they stay apart printed in greyscale), in order.
const std::string& SeriesColour(size_t index);
// Dash patterns for lines, so that overlaid lines stay apart without colour ("" = solid).
const std::string& SeriesDash(size_t index);

// A value with text for its tooltip (<title>).
std::string FormatValue(double value, Unit unit);

// Axis ticks: about `count` round values covering [low, high].
std::vector<double> NiceTicks(double low, double high, int count);

struct BarSeries {
  std::string name;
  std::vector<std::optional<double>> values;  // one per category; nullopt draws nothing
  std::string colour;    // "" = SeriesColour of the series' position
  bool hatched = false;  // striped over its colour: told apart where greys are alike
};

struct BarChart {
  std::string id;  // the <svg>'s id
  std::string title;
  std::string value_label;  // the value axis' label, without the unit ("Peak allocated")
  Unit value_unit = Unit::kBytes;
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
  // Stacked bars: a second, outlined bar beside each stack (e.g. reserved beside allocated).
  std::optional<BarSeries> beside;
  // Horizontal lines across the plot, e.g. the device budget.
  std::vector<std::pair<std::string, double>> lines;
  // Text under a category's bar (e.g. "oom"): empty or one per category.
  std::vector<std::string> notes;
};

// Stacked bars, one stack per category (series stacked in order), `beside` as an outlined bar.
std::string DrawStackedBars(const BarChart& chart);
// One bar per category and series, side by side; a ratio chart draws from 1.
std::string DrawGroupedBars(const BarChart& chart);

// A waterfall: a start bar, steps that rise or fall from the running total, an end bar.
struct WaterfallStep {
  std::string label;
  double delta = 0.0;
  std::string note;  // written above the bar instead of the signed delta, when given
};
struct Waterfall {
  std::string id;
  std::string title;
  std::string value_label;
  Unit value_unit = Unit::kBytes;
  std::string start_label, end_label;
  double start = 0.0, end = 0.0;  // the steps should lead from start to end
  std::vector<WaterfallStep> steps;
};
std::string DrawWaterfall(const Waterfall& chart);

struct Point {
  double x = 0.0, y = 0.0;
};
struct LineSeries {
  std::string name;  // the legend's text
  std::vector<Point> points;
  bool emphasised = false;  // drawn thicker (the loss reference)
  // A marked point (e.g. the peak) and its label.
  std::optional<Point> marker;
  std::string marker_label;
  std::string group;  // data-series attribute: lets the page's script show and hide a series
};
struct LineChart {
  std::string id;
  std::string title;
  std::string x_label, y_label;
  Unit x_unit = Unit::kNumber, y_unit = Unit::kNumber;
  std::vector<LineSeries> series;
  bool hidden_by_default_after_four = false;  // series 5.. start hidden (the page can show them)
};
std::string DrawLines(const LineChart& chart);

struct ScatterPoint {
  std::string label;  // the point's text (cell number) and tooltip
  double x = 0.0, y = 0.0;
  bool failed = false;  // drawn as a cross (an OOM cell at the budget)
  bool on_front = false;
};
struct Scatter {
  std::string id;
  std::string title;
  std::string x_label, y_label;
  Unit x_unit = Unit::kBytes, y_unit = Unit::kNumber;
  std::vector<ScatterPoint> points;
  std::optional<double> x_line;  // a vertical line (the budget)
  std::string x_line_label;
  std::string note;  // a line of text under the title
};
// Points; those on the front joined by a step line.
std::string DrawScatter(const Scatter& chart);

// Escapes text for HTML and SVG (& < > " ').
std::string Escape(const std::string& text);

}  // namespace memsweep::page
