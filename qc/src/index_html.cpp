// index.html: a batch's pictures on one self-contained page, worst first.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "autoreg/base/atomic_file.h"
#include "autoreg/base/html.h"
#include "autoreg/qc/picture.h"

namespace autoreg::qc {

namespace {

// A relative path as a URL: '#', '?', '%', spaces and non-ASCII bytes percent-encoded.
std::string escape_url(const std::string& path) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || std::strchr("-._~/", c) != nullptr) {
      out += ch;
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

std::string number(double v, const char* format) {
  if (!std::isfinite(v)) return "&ndash;";
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

bool failed(const IndexRow& r) { return r.status != "ok"; }

// Worst first: failed rows, then ascending Dice (rows without Dice last), then descending
// TRE (rows without it last), then descending folding (rows without folding last), then by
// name.
bool worse(const IndexRow& a, const IndexRow& b) {
  if (failed(a) != failed(b)) return failed(a);
  const bool a_warned = !a.warning.empty(), b_warned = !b.warning.empty();
  if (a_warned != b_warned) return a_warned;
  const bool a_dice = std::isfinite(a.dice), b_dice = std::isfinite(b.dice);
  if (a_dice != b_dice) return a_dice;
  if (a_dice && a.dice != b.dice) return a.dice < b.dice;
  const bool a_tre = std::isfinite(a.tre_mm), b_tre = std::isfinite(b.tre_mm);
  if (a_tre != b_tre) return a_tre;
  if (a_tre && a.tre_mm != b.tre_mm) return a.tre_mm > b.tre_mm;
  const bool a_fold = std::isfinite(a.folding_percent), b_fold = std::isfinite(b.folding_percent);
  if (a_fold != b_fold) return a_fold;
  if (a_fold && a.folding_percent != b.folding_percent) return a.folding_percent > b.folding_percent;
  return a.name < b.name;
}

// Counts the pictures that loaded once the page has (img.complete with a natural width),
// reports it in #qc-load-status and body[data-loaded][data-total], and outlines the
// broken ones with a note naming the file.
constexpr const char* kLoadScript = R"(<script>
window.addEventListener('load', function () {
  var pictures = document.querySelectorAll('img.qc-picture'), loaded = 0;
  pictures.forEach(function (img) {
    if (img.complete && img.naturalWidth > 0) { loaded++; return; }
    img.classList.add('broken');
    var note = document.createElement('div');
    note.className = 'broken-note';
    note.textContent = 'picture did not load: ' + img.getAttribute('src');
    img.parentNode.insertBefore(note, img);
  });
  document.getElementById('qc-load-status').textContent =
      'loaded ' + loaded + ' of ' + pictures.length + ' pictures';
  document.body.setAttribute('data-loaded', String(loaded));
  document.body.setAttribute('data-total', String(pictures.length));
});
</script>
)";

constexpr const char* kStyle = R"(<style>
body { font-family: sans-serif; background: #141414; color: #ddd; margin: 1em; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: 4px 8px; text-align: left; vertical-align: top; }
tr.figures td { border-top: 1px solid #444; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td.status, tr.warned td.status { color: #ff5555; font-weight: bold; }
td.warning { color: #ff5555; }
td.error { color: #ffaaaa; white-space: pre-wrap; }
img.qc-picture { width: 100%; height: auto; display: block; }
img.broken { outline: 3px solid #ff00ff; min-height: 3em; }
.broken-note { color: #ff00ff; font-weight: bold; }
</style>
)";

}  // namespace

void write_index_html(const std::string& path, std::vector<IndexRow> rows, const std::string& title) {
  std::stable_sort(rows.begin(), rows.end(), worse);
  const bool tre = std::any_of(rows.begin(), rows.end(), [](const IndexRow& r) { return std::isfinite(r.tre_mm); });
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << base::escape_html(title)
       << "</title>\n" << kStyle << "</head>\n<body>\n<h1>" << base::escape_html(title) << "</h1>\n"
       << "<p id=\"qc-load-status\">loading pictures</p>\n<table>\n<thead><tr><th>#</th><th>name</th>"
       << "<th>status</th><th>Dice</th>" << (tre ? "<th>TRE mm</th>" : "")
       << "<th>folding %</th><th>seconds</th><th>error</th></tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const IndexRow& r = rows[i];
    const std::string name = base::escape_html(r.name);
    const bool warned = !failed(r) && !r.warning.empty();
    html << "<tr class=\"figures " << (failed(r) ? "failed" : warned ? "warned" : "ok") << "\"><td class=\"num\">" << i + 1
         << "</td><td class=\"name\">" << name << "</td><td class=\"status\">"
         << base::escape_html(warned ? r.status + ", warning" : r.status)
         << "</td><td class=\"num\">" << number(r.dice, "%.3f") << "</td><td class=\"num\">"
         << (tre ? number(r.tre_mm, "%.2f") + "</td><td class=\"num\">" : std::string())
         << number(r.folding_percent, "%.3f") << "</td><td class=\"num\">" << number(r.seconds, "%.1f")
         << "</td><td class=\"error\">" << base::escape_html(r.error) << "</td></tr>\n";
    if (!r.warning.empty()) {
      html << "<tr class=\"warning\"><td></td><td class=\"warning\" colspan=\"" << (tre ? 7 : 6) << "\">"
           << base::escape_html(r.warning) << "</td></tr>\n";
    }
    if (!r.picture.empty()) {
      html << "<tr class=\"picture\"><td colspan=\"" << (tre ? 8 : 7) << "\"><img class=\"qc-picture\" src=\""
           << base::escape_html(escape_url(r.picture)) << "\" alt=\"quality-control picture of " << name
           << "\" loading=\"eager\"></td></tr>\n";
    }
  }
  html << "</tbody>\n</table>\n" << kLoadScript << "</body>\n</html>\n";

  base::write_file_atomically(path, html.str());
}

}  // namespace autoreg::qc
