// The search page.

import { $, api, el, query, showAlert } from "./common.js";

// ------------------------------------------------------------------ search

export function searchPage() {
  const results = $("search-results");
  async function search() {
    const q = $("search-q").value.trim();
    if (!q) return;
    const params = { q, mode: $("search-mode").value, k: $("search-k").value };
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
    search();
  });
  return search;
}
