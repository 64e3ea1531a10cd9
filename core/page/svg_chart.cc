#include "core/page/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "core/memory/byte_size.h"

namespace memsweep::page {
namespace {

// The plot area inside each chart.
constexpr double kWidth = 960, kHeight = 360;
constexpr double kLeft = 78, kRight = 230, kTop = 44, kBottom = 84;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

std::string Num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

// A legend line's characters (the legend column is kRight wide).
constexpr size_t kLegendChars = 30;

// A bar series' plain colour: the one it names, else its position's.
std::string PlainColourOf(const std::vector<BarSeries>& series, size_t index) {
  return series[index].colour.empty() ? SeriesColour(index) : series[index].colour;
}
// Its fill: the plain colour, or the stripes over it (HatchPatterns' pattern; a fragment of the
// page itself, nothing fetched).
std::string ColourOf(const std::string& chart_id, const std::vector<BarSeries>& series,
                     size_t index) {
  if (!series[index].hatched) return PlainColourOf(series, index);
  return "url(#" + chart_id + "-hatch" + std::to_string(index) + ")";
}
std::string HatchPatterns(const std::string& chart_id, const std::vector<BarSeries>& series) {
  std::string defs;
  for (size_t s = 0; s < series.size(); ++s) {
    if (!series[s].hatched) continue;
    defs += "<pattern id=\"" + chart_id + "-hatch" + std::to_string(s) +
            "\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
            "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"" +
            PlainColourOf(series, s) +
            "\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#222\" "
            "stroke-width=\"1.6\"/></pattern>";
  }
  return defs.empty() ? "" : "<defs>" + defs + "</defs>\n";
}

std::string Title(const std::string& text) { return "<title>" + Escape(text) + "</title>"; }

// The unit the axis is written in: a power of 1024 for bytes.
struct AxisUnit {
  double scale = 1.0;
  std::string suffix;  // "MiB", "x", ""
};

AxisUnit ChooseUnit(Unit unit, double high) {
  if (unit == Unit::kRatio) return {1.0, "x"};
  if (unit != Unit::kBytes) return {1.0, ""};
  const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double scale = 1.0;
  int i = 0;
  while (i < 4 && std::abs(high) >= 1024.0 * scale) {
    scale *= 1024.0;
    ++i;
  }
  return {scale, names[i]};
}

std::string TickText(double value) {
  char buffer[32];
  if (value == std::floor(value) && std::abs(value) < 1e7) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
  } else if (std::abs(value) >= 1e5 || (std::abs(value) < 1e-3 && value != 0)) {
    std::snprintf(buffer, sizeof buffer, "%.2g", value);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.4g", value);
  }
  return buffer;
}

std::string AxisLabel(const std::string& label, const AxisUnit& unit) {
  if (unit.suffix.empty()) return label;
  return label + " (" + unit.suffix + ")";
}

// A linear axis from [low, high] in data units to pixels.
struct Scale {
  double low = 0, high = 1, from = 0, to = 1;
  double operator()(double v) const {
    if (high == low) return (from + to) / 2;
    return from + (v - low) / (high - low) * (to - from);
  }
};

struct Range {
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    if (!std::isfinite(v)) return;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  bool Empty() const { return low > high; }
};

// Ticks in the axis unit, and the range they cover in data units.
struct Axis {
  AxisUnit unit;
  std::vector<double> ticks;  // data units
  double low = 0, high = 1;
};

Axis MakeAxis(Range range, Unit unit, bool from_zero) {
  if (range.Empty()) range = {0.0, 1.0};
  if (from_zero) {
    range.low = std::min(range.low, 0.0);
    range.high = std::max(range.high, 0.0);
  }
  if (range.low == range.high) {
    const double pad = range.low == 0 ? 1.0 : std::abs(range.low) * 0.1;
    range.low -= from_zero && range.low == 0 ? 0 : pad;
    range.high += pad;
  }
  Axis axis;
  axis.unit = ChooseUnit(unit, std::max(std::abs(range.low), std::abs(range.high)));
  const std::vector<double> ticks =
      NiceTicks(range.low / axis.unit.scale, range.high / axis.unit.scale, 5);
  for (double t : ticks) axis.ticks.push_back(t * axis.unit.scale);
  axis.low = std::min(range.low, axis.ticks.front());
  axis.high = std::max(range.high, axis.ticks.back());
  return axis;
}

class Svg {
 public:
  Svg(const std::string& id, const std::string& title, double height = kHeight) {
    out_ << "<svg class=\"chart\" id=\"" << Escape(id) << "\" xmlns=\"http://www.w3.org/2000/svg\""
         << " viewBox=\"0 0 " << kWidth << " " << height << "\" width=\"" << kWidth
         << "\" height=\"" << height << "\" role=\"img\" aria-label=\"" << Escape(title)
         << "\">\n<text class=\"chart-title\" x=\"" << kLeft << "\" y=\"22\">" << Escape(title)
         << "</text>\n";
  }
  std::ostringstream& out() { return out_; }
  std::string Finish() {
    out_ << "</svg>\n";
    return out_.str();
  }

 private:
  std::ostringstream out_;
};

void DrawValueAxis(std::ostringstream& out, const Axis& axis, const Scale& y,
                   const std::string& label) {
  for (double t : axis.ticks) {
    const double py = y(t);
    out << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kPlotW << "\" y1=\""
        << Num(py) << "\" y2=\"" << Num(py) << "\"/>"
        << "<text class=\"tick\" x=\"" << kLeft - 6 << "\" y=\"" << Num(py + 4)
        << "\" text-anchor=\"end\">" << TickText(t / axis.unit.scale) << "</text>\n";
  }
  out << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << kLeft << "\" y1=\"" << kTop
      << "\" y2=\"" << kTop + kPlotH << "\"/>\n"
      << "<text class=\"axis-label\" transform=\"translate(16," << Num(kTop + kPlotH / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << Escape(AxisLabel(label, axis.unit))
      << "</text>\n";
}

void DrawXAxis(std::ostringstream& out, const Axis& axis, const Scale& x,
               const std::string& label) {
  for (double t : axis.ticks) {
    const double px = x(t);
    out << "<line class=\"grid\" x1=\"" << Num(px) << "\" x2=\"" << Num(px) << "\" y1=\""
        << kTop << "\" y2=\"" << kTop + kPlotH << "\"/>"
        << "<text class=\"tick\" x=\"" << Num(px) << "\" y=\"" << kTop + kPlotH + 16
        << "\" text-anchor=\"middle\">" << TickText(t / axis.unit.scale) << "</text>\n";
  }
  out << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kPlotW << "\" y1=\""
      << kTop + kPlotH << "\" y2=\"" << kTop + kPlotH << "\"/>\n"
      << "<text class=\"axis-label\" x=\"" << Num(kLeft + kPlotW / 2) << "\" y=\""
      << kTop + kPlotH + 40 << "\" text-anchor=\"middle\">"
      << Escape(AxisLabel(label, axis.unit)) << "</text>\n";
}

// Whether category names are written slanted: when the longest would not fit its band.
bool Slanted(const std::vector<std::string>& categories, double band) {
  size_t longest = 0;
  for (const std::string& c : categories) longest = std::max(longest, c.size());
  // About 6.5 px per character at the tick font size.
  return static_cast<double>(longest) * 6.5 > band * 0.95;
}
// The height slanted names need below the plot.
constexpr double kSlantExtra = 56;

// A horizontal line across the plot at pixel height `py`, labelled at its right end.
void DrawLimit(std::ostringstream& out, double py, const std::string& label) {
  out << "<line class=\"limit\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kPlotW << "\" y1=\""
      << Num(py) << "\" y2=\"" << Num(py) << "\"/>"
      << "<text class=\"limit-label\" x=\"" << kLeft + kPlotW - 4 << "\" y=\"" << Num(py - 4)
      << "\" text-anchor=\"end\">" << Escape(label) << "</text>\n";
}

// Category names under the bars, and the axis label under them.
void DrawCategories(std::ostringstream& out, const std::vector<std::string>& categories,
                    const std::vector<std::string>& notes, double band,
                    const std::string& label) {
  const bool slanted = Slanted(categories, band);
  for (size_t i = 0; i < categories.size(); ++i) {
    const double cx = kLeft + band * (static_cast<double>(i) + 0.5);
    const double cy = kTop + kPlotH + 15;
    out << "<text class=\"tick\" x=\"" << Num(cx) << "\" y=\"" << Num(cy) << "\"";
    if (slanted) {
      out << " transform=\"rotate(-40 " << Num(cx) << " " << Num(cy) << ")\" text-anchor=\"end\"";
    } else {
      out << " text-anchor=\"middle\"";
    }
    std::string text = categories[i];
    if (slanted && text.size() > 18) text = text.substr(0, 17) + "…";
    out << ">" << Title(categories[i]) << Escape(text) << "</text>\n";
    if (i < notes.size() && !notes[i].empty()) {
      out << "<text class=\"note\" x=\"" << Num(cx) << "\" y=\"" << Num(kTop + kPlotH - 4)
          << "\" text-anchor=\"middle\">" << Escape(notes[i]) << "</text>\n";
    }
  }
  out << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kPlotW << "\" y1=\""
      << kTop + kPlotH << "\" y2=\"" << kTop + kPlotH << "\"/>\n";
  if (!label.empty()) {
    out << "<text class=\"axis-label\" x=\"" << Num(kLeft + kPlotW / 2) << "\" y=\""
        << kTop + kPlotH + (slanted ? 36 + kSlantExtra : 36) << "\" text-anchor=\"middle\">" << Escape(label)
        << "</text>\n";
  }
}

struct LegendEntry {
  std::string name;
  std::string colour;
  std::string dash;        // lines
  bool outline = false;    // an outlined box (the beside bar)
  bool line = false;       // a line sample instead of a box
  bool emphasised = false;
  std::string group;       // data-series: the page's script toggles the series
  bool hidden = false;
};

// A legend entry's text on at most three lines.
std::vector<std::string> LegendLines(const std::string& name) {
  std::vector<std::string> lines;
  std::string rest = name;
  while (!rest.empty() && lines.size() < 3) {
    size_t cut = rest.size();
    if (cut > kLegendChars) {
      cut = rest.rfind(' ', kLegendChars);
      if (cut == std::string::npos || cut < 8) cut = kLegendChars;
    }
    lines.push_back(rest.substr(0, cut));
    rest = cut < rest.size() ? rest.substr(cut + (rest[cut] == ' ' ? 1 : 0)) : "";
  }
  if (!rest.empty()) lines.back() += "…";
  return lines;
}

// The chart height that leaves room for a legend of these names.
double HeightFor(const std::vector<std::string>& names, double height) {
  double y = kTop + 4;
  for (const std::string& name : names) y += 19 + 14 * (static_cast<double>(LegendLines(name).size()) - 1);
  return std::max(height, y + 8);
}

void DrawLegend(std::ostringstream& out, const std::vector<LegendEntry>& entries) {
  double y = kTop + 4;
  const double x = kWidth - kRight + 14;
  for (const LegendEntry& e : entries) {
    out << "<g class=\"legend-entry" << (e.hidden ? " off" : "") << "\"";
    if (!e.group.empty()) out << " data-series=\"" << Escape(e.group) << "\"";
    out << ">";
    if (e.line) {
      out << "<line x1=\"" << x << "\" x2=\"" << x + 22 << "\" y1=\"" << Num(y + 5) << "\" y2=\""
          << Num(y + 5) << "\" stroke=\"" << e.colour << "\" stroke-width=\""
          << (e.emphasised ? 4 : 2) << "\"" << (e.dash.empty() ? "" : " stroke-dasharray=\"" + e.dash + "\"")
          << "/>";
    } else {
      out << "<rect x=\"" << x << "\" y=\"" << Num(y) << "\" width=\"12\" height=\"12\" fill=\""
          << (e.outline ? "none" : e.colour) << "\" stroke=\""
          << (e.outline ? e.colour : "#333") << "\" stroke-width=\"" << (e.outline ? 2 : 0.5)
          << "\"/>";
    }
    const std::vector<std::string> lines = LegendLines(e.name);
    for (size_t l = 0; l < lines.size(); ++l) {
      out << "<text class=\"legend\" x=\"" << x + 28 << "\" y=\"" << Num(y + 10 + 14 * l)
          << "\">" << Escape(lines[l]) << "</text>";
    }
    y += 14 * (static_cast<double>(lines.size()) - 1);
    out << "</g>\n";
    y += 19;
  }
}

}  // namespace

const std::string& SeriesColour(size_t index) {
  // Dark, light and middle tones alternate: neighbours differ in grey value as well as in hue.
  static const std::vector<std::string> kColours = {
      "#08306b", "#fdae6b", "#31a354", "#a63603", "#9ecae1",
      "#54278f", "#d9d9d9", "#e6550d", "#006d2c", "#bcbddc"};
  return kColours[index % kColours.size()];
}

const std::string& SeriesDash(size_t index) {
  static const std::vector<std::string> kDashes = {"", "7 3", "2 3", "10 3 2 3", "4 4", "1 2"};
  return kDashes[index % kDashes.size()];
}

std::string FormatValue(double value, Unit unit) {
  switch (unit) {
    case Unit::kBytes: return memory::FormatBytes(std::llround(value));
    case Unit::kRatio: {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, "%.3gx", value);
      return buffer;
    }
    case Unit::kNumber: break;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

std::vector<double> NiceTicks(double low, double high, int count) {
  if (!(high > low)) return {low};
  const double raw = (high - low) / std::max(count, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(low / step + 1e-9) * step;
  for (double t = first; t <= high + step * (1 - 1e-9); t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= high - step * 1e-9) break;
  }
  return ticks;
}

std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string DrawStackedBars(const BarChart& chart) {
  const size_t n = chart.categories.size();
  Range range;
  range.Add(0);
  for (size_t i = 0; i < n; ++i) {
    double total = 0;
    for (const BarSeries& s : chart.series) {
      if (i < s.values.size() && s.values[i]) total += *s.values[i];
    }
    range.Add(total);
    if (chart.beside && i < chart.beside->values.size() && chart.beside->values[i]) {
      range.Add(*chart.beside->values[i]);
    }
  }
  // A line far above every bar (a budget 100 times the peaks) would flatten them: it is named in
  // the legend instead.
  const double tallest = range.high;
  std::vector<std::pair<std::string, double>> drawn_lines, off_scale;
  for (const auto& line : chart.lines) {
    (line.second <= 2 * tallest ? drawn_lines : off_scale).push_back(line);
  }
  for (const auto& [name, value] : drawn_lines) range.Add(value);
  const Axis axis = MakeAxis(range, chart.value_unit, true);
  const Scale y{axis.low, axis.high, kTop + kPlotH, kTop};
  const double band = kPlotW / std::max<size_t>(n, 1);
  Svg svg(chart.id, chart.title, kHeight + (Slanted(chart.categories, band) ? kSlantExtra : 0));
  std::ostringstream& out = svg.out();
  out << HatchPatterns(chart.id, chart.series);
  DrawValueAxis(out, axis, y, chart.value_label);
  const double bar = std::min(band * (chart.beside ? 0.42 : 0.7), 48.0);
  for (size_t i = 0; i < n; ++i) {
    const double x0 = kLeft + band * static_cast<double>(i) + (band - bar * (chart.beside ? 2.1 : 1)) / 2;
    double total = 0;
    for (size_t s = 0; s < chart.series.size(); ++s) {
      const BarSeries& series = chart.series[s];
      if (i >= series.values.size() || !series.values[i] || *series.values[i] <= 0) continue;
      const double v = *series.values[i];
      out << "<rect class=\"mark\" x=\"" << Num(x0) << "\" y=\"" << Num(y(total + v))
          << "\" width=\"" << Num(bar) << "\" height=\"" << Num(y(total) - y(total + v))
          << "\" fill=\"" << ColourOf(chart.id, chart.series, s) << "\">"
          << Title(chart.categories[i] + ", " + series.name + ": " +
                   FormatValue(v, chart.value_unit))
          << "</rect>\n";
      total += v;
    }
    if (i < chart.notes.size() && !chart.notes[i].empty()) {
      out << "<text class=\"note\" x=\"" << Num(x0 + bar / 2) << "\" y=\"" << Num(y(total) - 4)
          << "\" text-anchor=\"middle\">" << Escape(chart.notes[i]) << "</text>\n";
    }
    if (chart.beside && i < chart.beside->values.size() && chart.beside->values[i] &&
        *chart.beside->values[i] > 0) {
      const double v = *chart.beside->values[i];
      out << "<rect class=\"mark beside\" x=\"" << Num(x0 + bar * 1.1) << "\" y=\"" << Num(y(v))
          << "\" width=\"" << Num(bar) << "\" height=\"" << Num(y(0) - y(v))
          << "\" fill=\"none\" stroke=\"#444\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\">"
          << Title(chart.categories[i] + ", " + chart.beside->name + ": " +
                   FormatValue(v, chart.value_unit))
          << "</rect>\n";
    }
  }
  for (const auto& [name, value] : drawn_lines) {
    DrawLimit(out, y(value), name + " " + FormatValue(value, chart.value_unit));
  }
  DrawCategories(out, chart.categories, {}, band, "cell");
  std::vector<LegendEntry> legend;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    legend.push_back({.name = chart.series[s].name, .colour = ColourOf(chart.id, chart.series, s)});
  }
  if (chart.beside) legend.push_back({.name = chart.beside->name, .colour = "#444", .outline = true});
  for (const auto& [name, value] : off_scale) {
    legend.push_back({.name = name + " " + FormatValue(value, chart.value_unit) + " (off the scale)",
                      .colour = "#a50f15",
                      .dash = "6 4",
                      .line = true});
  }
  DrawLegend(out, legend);
  return svg.Finish();
}

std::string DrawGroupedBars(const BarChart& chart) {
  const size_t n = chart.categories.size();
  const bool ratio = chart.value_unit == Unit::kRatio;
  const double origin = ratio ? 1.0 : 0.0;
  Range range;
  range.Add(origin);
  for (const BarSeries& s : chart.series) {
    for (const auto& v : s.values) {
      if (v) range.Add(*v);
    }
  }
  if (ratio) range.Add(0);
  const Axis axis = MakeAxis(range, chart.value_unit, true);
  const Scale y{axis.low, axis.high, kTop + kPlotH, kTop};
  const double band = kPlotW / std::max<size_t>(n, 1);
  Svg svg(chart.id, chart.title, kHeight + (Slanted(chart.categories, band) ? kSlantExtra : 0));
  std::ostringstream& out = svg.out();
  DrawValueAxis(out, axis, y, chart.value_label);
  const size_t k = std::max<size_t>(chart.series.size(), 1);
  const double bar = std::min(band * 0.8 / static_cast<double>(k), 40.0);
  for (size_t i = 0; i < n; ++i) {
    const double x0 = kLeft + band * static_cast<double>(i) + (band - bar * static_cast<double>(k)) / 2;
    for (size_t s = 0; s < chart.series.size(); ++s) {
      const BarSeries& series = chart.series[s];
      if (i >= series.values.size() || !series.values[i]) continue;
      const double v = *series.values[i];
      const double top = std::min(y(v), y(origin)), bottom = std::max(y(v), y(origin));
      out << "<rect class=\"mark\" x=\"" << Num(x0 + bar * static_cast<double>(s)) << "\" y=\""
          << Num(top) << "\" width=\"" << Num(bar * 0.92) << "\" height=\""
          << Num(std::max(bottom - top, 1.0)) << "\" fill=\"" << SeriesColour(s) << "\">"
          << Title(chart.categories[i] + ", " + series.name + ": " +
                   FormatValue(v, chart.value_unit))
          << "</rect>\n";
    }
  }
  if (ratio) DrawLimit(out, y(1), "baseline = 1x");
  for (const auto& [name, value] : chart.lines) {
    DrawLimit(out, y(value), name + " " + FormatValue(value, chart.value_unit));
  }
  DrawCategories(out, chart.categories, chart.notes, band, "");
  std::vector<LegendEntry> legend;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    legend.push_back({.name = chart.series[s].name, .colour = SeriesColour(s)});
  }
  DrawLegend(out, legend);
  return svg.Finish();
}

std::string DrawWaterfall(const Waterfall& chart) {
  Range range;
  range.Add(0);
  range.Add(chart.start);
  range.Add(chart.end);
  double running = chart.start;
  for (const WaterfallStep& step : chart.steps) {
    running += step.delta;
    range.Add(running);
  }
  const Axis axis = MakeAxis(range, chart.value_unit, true);
  const Scale y{axis.low, axis.high, kTop + kPlotH, kTop};
  std::vector<std::string> categories = {chart.start_label};
  for (const WaterfallStep& step : chart.steps) categories.push_back(step.label);
  categories.push_back(chart.end_label);
  const double band = kPlotW / static_cast<double>(categories.size());
  Svg svg(chart.id, chart.title, kHeight + (Slanted(categories, band) ? kSlantExtra : 0));
  std::ostringstream& out = svg.out();
  DrawValueAxis(out, axis, y, chart.value_label);
  const double bar = std::min(band * 0.7, 56.0);
  auto draw = [&](size_t i, double from, double to, const std::string& colour,
                  const std::string& text) {
    const double x = kLeft + band * static_cast<double>(i) + (band - bar) / 2;
    const double top = std::min(y(from), y(to)), bottom = std::max(y(from), y(to));
    out << "<rect class=\"mark\" x=\"" << Num(x) << "\" y=\"" << Num(top) << "\" width=\""
        << Num(bar) << "\" height=\"" << Num(std::max(bottom - top, 1.0)) << "\" fill=\""
        << colour << "\" stroke=\"#333\" stroke-width=\"0.5\">" << Title(text) << "</rect>\n";
  };
  draw(0, 0, chart.start, "#5a5a5a", chart.start_label + ": " + FormatValue(chart.start, chart.value_unit));
  running = chart.start;
  for (size_t i = 0; i < chart.steps.size(); ++i) {
    const WaterfallStep& step = chart.steps[i];
    const double next = running + step.delta;
    const std::string sign = step.delta < 0 ? "−" : "+";
    // Falls (memory saved) dark, rises light: apart in greyscale too.
    draw(i + 1, running, next, step.delta < 0 ? "#08306b" : "#fdae6b",
         step.label + ": " + sign + FormatValue(std::abs(step.delta), chart.value_unit) +
             (step.note.empty() ? "" : " (" + step.note + ")"));
    const double x = kLeft + band * static_cast<double>(i + 1) + band / 2;
    out << "<text class=\"note\" x=\"" << Num(x) << "\" y=\"" << Num(std::min(y(running), y(next)) - 4)
        << "\" text-anchor=\"middle\">"
        << Escape(step.note.empty() ? sign + FormatValue(std::abs(step.delta), chart.value_unit)
                                    : step.note)
        << "</text>\n";
    running = next;
  }
  draw(categories.size() - 1, 0, chart.end, "#5a5a5a",
       chart.end_label + ": " + FormatValue(chart.end, chart.value_unit));
  DrawCategories(out, categories, {}, band, "");
  DrawLegend(out, {{.name = "less memory", .colour = "#08306b"},
                   {.name = "more memory", .colour = "#fdae6b"},
                   {.name = "measured peak", .colour = "#5a5a5a"}});
  return svg.Finish();
}

namespace {
std::string LegendName(const LineSeries& series) {
  return series.marker_label.empty() ? series.name : series.name + ": " + series.marker_label;
}
}  // namespace

std::string DrawLines(const LineChart& chart) {
  Range xr, yr;
  for (const LineSeries& s : chart.series) {
    for (const Point& p : s.points) {
      xr.Add(p.x);
      yr.Add(p.y);
    }
  }
  const Axis xaxis = MakeAxis(xr, chart.x_unit, false);
  const Axis yaxis = MakeAxis(yr, chart.y_unit, chart.y_unit == Unit::kBytes);
  const Scale x{xaxis.low, xaxis.high, kLeft, kLeft + kPlotW};
  const Scale y{yaxis.low, yaxis.high, kTop + kPlotH, kTop};
  std::vector<std::string> names;
  for (const LineSeries& series : chart.series) names.push_back(LegendName(series));
  Svg svg(chart.id, chart.title, HeightFor(names, kHeight));
  std::ostringstream& out = svg.out();
  DrawValueAxis(out, yaxis, y, chart.y_label);
  DrawXAxis(out, xaxis, x, chart.x_label);
  std::vector<LegendEntry> legend;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const LineSeries& series = chart.series[s];
    const bool hidden = chart.hidden_by_default_after_four && s >= 4;
    out << "<g class=\"series" << (hidden ? " off" : "") << "\" data-series=\""
        << Escape(series.group) << "\">";
    out << "<polyline class=\"mark\" fill=\"none\" stroke=\"" << SeriesColour(s)
        << "\" stroke-width=\"" << (series.emphasised ? 3.5 : 1.8) << "\"";
    if (!SeriesDash(s).empty()) out << " stroke-dasharray=\"" << SeriesDash(s) << "\"";
    out << " points=\"";
    for (const Point& p : series.points) out << Num(x(p.x)) << "," << Num(y(p.y)) << " ";
    out << "\">" << Title(series.name) << "</polyline>";
    if (series.marker) {
      const double px = x(series.marker->x), py = y(series.marker->y);
      out << "<circle class=\"peak\" cx=\"" << Num(px) << "\" cy=\"" << Num(py)
          << "\" r=\"5\" fill=\"" << SeriesColour(s) << "\" stroke=\"#000\" stroke-width=\"1\">"
          << Title(series.name + ": " + series.marker_label) << "</circle>";
    }
    out << "</g>\n";
    legend.push_back({.name = LegendName(series),
                      .colour = SeriesColour(s),
                      .dash = SeriesDash(s),
                      .line = true,
                      .emphasised = series.emphasised,
                      .group = series.group,
                      .hidden = hidden});
  }
  DrawLegend(out, legend);
  return svg.Finish();
}

std::string DrawScatter(const Scatter& chart) {
  Range xr, yr;
  for (const ScatterPoint& p : chart.points) {
    xr.Add(p.x);
    yr.Add(p.y);
  }
  if (chart.x_line) xr.Add(*chart.x_line);
  const Axis xaxis = MakeAxis(xr, chart.x_unit, true);
  const Axis yaxis = MakeAxis(yr, chart.y_unit, true);
  const Scale x{xaxis.low, xaxis.high, kLeft, kLeft + kPlotW};
  const Scale y{yaxis.low, yaxis.high, kTop + kPlotH, kTop};
  Svg svg(chart.id, chart.title);
  std::ostringstream& out = svg.out();
  if (!chart.note.empty()) {
    out << "<text class=\"note\" x=\"" << kLeft << "\" y=\"38\">" << Escape(chart.note)
        << "</text>\n";
  }
  DrawValueAxis(out, yaxis, y, chart.y_label);
  DrawXAxis(out, xaxis, x, chart.x_label);
  if (chart.x_line) {
    const double px = x(*chart.x_line);
    out << "<line class=\"limit\" x1=\"" << Num(px) << "\" x2=\"" << Num(px) << "\" y1=\"" << kTop
        << "\" y2=\"" << kTop + kPlotH << "\"/>"
        << "<text class=\"limit-label\" x=\"" << Num(px - 4) << "\" y=\"" << kTop + 12
        << "\" text-anchor=\"end\">" << Escape(chart.x_line_label) << "</text>\n";
  }
  // The front: by memory, each point that is faster than every point using less.
  std::vector<ScatterPoint> front;
  for (const ScatterPoint& p : chart.points) {
    if (p.on_front) front.push_back(p);
  }
  std::sort(front.begin(), front.end(),
            [](const ScatterPoint& a, const ScatterPoint& b) { return a.x < b.x; });
  if (front.size() > 1) {
    out << "<polyline class=\"front\" fill=\"none\" stroke=\"#e6550d\" stroke-width=\"2\" "
           "stroke-dasharray=\"6 3\" points=\"";
    for (size_t i = 0; i < front.size(); ++i) {
      if (i > 0) out << Num(x(front[i].x)) << "," << Num(y(front[i - 1].y)) << " ";
      out << Num(x(front[i].x)) << "," << Num(y(front[i].y)) << " ";
    }
    out << "\"/>\n";
  }
  for (const ScatterPoint& p : chart.points) {
    const double px = x(p.x), py = y(p.y);
    const std::string tip = p.label + ": " + FormatValue(p.x, chart.x_unit) + ", " +
                            (p.failed ? "out of memory" : FormatValue(p.y, chart.y_unit));
    if (p.failed) {
      out << "<path class=\"mark oom\" d=\"M" << Num(px - 5) << "," << Num(py - 5) << "L"
          << Num(px + 5) << "," << Num(py + 5) << "M" << Num(px - 5) << "," << Num(py + 5) << "L"
          << Num(px + 5) << "," << Num(py - 5) << "\" stroke=\"#a50f15\" stroke-width=\"2.5\">"
          << Title(tip) << "</path>";
    } else {
      out << "<circle class=\"mark" << (p.on_front ? " on-front" : "") << "\" cx=\"" << Num(px)
          << "\" cy=\"" << Num(py) << "\" r=\"" << (p.on_front ? 6 : 4.5) << "\" fill=\""
          << (p.on_front ? "#e6550d" : "#08306b") << "\" stroke=\"#000\" stroke-width=\"0.8\">"
          << Title(tip) << "</circle>";
    }
    out << "<text class=\"point-label\" x=\"" << Num(px + 7) << "\" y=\"" << Num(py + 4) << "\">"
        << Escape(p.label) << "</text>\n";
  }
  DrawLegend(out, {{.name = "cell", .colour = "#08306b"},
                   {.name = "on the front: nothing is faster with less memory", .colour = "#e6550d"},
                   {.name = "out of memory (at its peak when it stopped)", .colour = "#a50f15"}});
  return svg.Finish();
}

}  // namespace memsweep::page
