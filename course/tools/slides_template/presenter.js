// The course's slide presenter: one slide section at a time, keyboard and buttons,
// the position kept in the address as #/slide/subslide.
(function () {
  "use strict";
  var deck = document.querySelector(".reveal .slides");
  if (!deck) { return; }
  var pages = [];
  Array.prototype.forEach.call(deck.children, function (slide, h) {
    if (slide.tagName !== "SECTION") { return; }
    var subs = Array.prototype.filter.call(slide.children, function (e) {
      return e.tagName === "SECTION";
    });
    (subs.length ? subs : [slide]).forEach(function (sub, v) {
      pages.push({ h: h, v: v, slide: slide, sub: sub });
    });
  });
  var bar = document.createElement("div");
  bar.className = "course-slides-bar";
  bar.innerHTML = '<button type="button" data-go="-1" title="previous (Left, PageUp)">&#8592;</button>' +
    '<button type="button" data-go="1" title="next (Right, Space, PageDown)">&#8594;</button>' +
    '<span class="course-slides-counter"></span>' +
    '<div class="course-slides-progress"><div></div></div>';
  document.body.appendChild(bar);
  var counter = bar.querySelector(".course-slides-counter");
  var progress = bar.querySelector(".course-slides-progress > div");
  var current = -1;

  function show(n) {
    n = Math.max(0, Math.min(pages.length - 1, n));
    if (n === current || !pages.length) { return; }
    if (current >= 0) {
      pages[current].slide.classList.remove("present");
      pages[current].sub.classList.remove("present");
    }
    current = n;
    var page = pages[n];
    page.slide.classList.add("present");
    page.sub.classList.add("present");
    page.slide.scrollTop = 0;
    counter.textContent = (n + 1) + " / " + pages.length;
    progress.style.width = (100 * (n + 1) / pages.length) + "%";
    if (history.replaceState) { history.replaceState(null, "", "#/" + page.h + "/" + page.v); }
  }

  function fromHash() {
    var m = /^#\/(\d+)(?:\/(\d+))?/.exec(location.hash);
    if (!m) { return 0; }
    for (var i = 0; i < pages.length; i++) {
      if (pages[i].h === +m[1] && pages[i].v === +(m[2] || 0)) { return i; }
    }
    return 0;
  }

  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) { return; }
    var next = ["ArrowRight", "ArrowDown", "PageDown", "n"];
    var prev = ["ArrowLeft", "ArrowUp", "PageUp", "p"];
    if (e.key === " ") { show(current + (e.shiftKey ? -1 : 1)); }
    else if (next.indexOf(e.key) >= 0) { show(current + 1); }
    else if (prev.indexOf(e.key) >= 0) { show(current - 1); }
    else if (e.key === "Home") { show(0); }
    else if (e.key === "End") { show(pages.length - 1); }
    else { return; }
    e.preventDefault();
  });
  bar.addEventListener("click", function (e) {
    var go = e.target.getAttribute("data-go");
    if (go) { show(current + Number(go)); }
  });
  window.courseSlides = {
    count: function () { return pages.length; },
    index: function () { return current; },
    go: show
  };
  show(fromHash());
})();
