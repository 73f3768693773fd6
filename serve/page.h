// The page `GET /` answers: serve/page.html, compiled in at build time (serve/page.cpp.in; nothing fetched
// from elsewhere).
#pragma once

#include <string_view>

namespace lact::serve {

std::string_view page_html();

}  // namespace lact::serve
