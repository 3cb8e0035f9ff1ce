// Text in HTML and SVG: the five characters that would be read as markup, escaped. One
// escape for the batch's index.html (qc/) and the search report (search/).
#pragma once

#include <string>
#include <string_view>

namespace autoreg::base {

// & < > " ' → &amp; &lt; &gt; &quot; &#39; (safe in element text and in quoted attributes).
std::string escape_html(std::string_view text);

}  // namespace autoreg::base
