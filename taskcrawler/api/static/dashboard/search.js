// The search page.

import { $, api, el, query, showAlert } from "./common.js";

// ------------------------------------------------------------------ search

export function searchPage() {
  const results = $("search-results");
  const asked = () => ({ q: $("search-q").value.trim(), mode: $("search-mode").value, k: $("search-k").value });
  async function search() {
    const params = asked();
    if (!params.q) return;
    try {
      const data = await api("GET", `/api/v1/search${query(params)}`);
      showAlert("");
      results.replaceChildren(
        ...data.results.map((found) =>
          el(
            "li",
            { class: "result" },
            el(
              "p",
              null,
              el("a", { href: `/jobs/${found.job_id}`, text: found.title || found.url }),
              " ",
              el("span", { class: "muted small", text: `${found.url} · chunk ${found.chunk_index} · score ${found.score.toFixed(3)}` }),
            ),
            el("p", { class: "chunk", text: found.text }),
          ),
        ),
      );
      if (!data.results.length) results.replaceChildren(el("li", { class: "muted", text: "Nothing found." }));
    } catch (error) {
      showAlert(error.message);
    }
  }
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    history.replaceState(null, "", `/search${query(asked())}`);
    search();
  });
  // The form is a plain GET form: a search's URL (shared, bookmarked, or the form sent before
  // this module had loaded) is searched on arrival.
  const inURL = new URLSearchParams(window.location.search);
  if (inURL.get("q")) {
    $("search-q").value = inURL.get("q");
    if (inURL.get("mode")) $("search-mode").value = inURL.get("mode");
    if (inURL.get("k")) $("search-k").value = inURL.get("k");
    search();
  }
  return search;
}
