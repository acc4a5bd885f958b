// weir console: the only script. Auto-refresh (remembered per browser)
// and nothing else: every page is rendered by the server.
(function () {
  var box = document.getElementById("autorefresh");
  if (!box) return;
  var key = "weir.console.autorefresh";
  var timer = null;
  function set(on) {
    if (timer) { clearTimeout(timer); timer = null; }
    if (on) timer = setTimeout(function () { location.reload(); }, 5000);
  }
  try { box.checked = localStorage.getItem(key) === "1"; } catch (e) {}
  set(box.checked);
  box.addEventListener("change", function () {
    try { localStorage.setItem(key, box.checked ? "1" : "0"); } catch (e) {}
    set(box.checked);
  });
})();
