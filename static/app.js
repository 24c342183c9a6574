// Lorry Controller pages: times in the reader's time zone and "x minutes
// ago", a question before buttons that stop or remove things, and the
// output of a running job as it grows. Every page works without this
// script; it only makes them livelier.
(function () {
	"use strict";

	// Times are relative to the server's clock, which the page carries, so
	// that a skewed client clock (or the WEBAPP's fake clock) does not say
	// "in 3 minutes" of something that just happened.
	var body = document.body;
	var serverNow = Number(body.getAttribute("data-now"));
	var skew = serverNow > 0 ? serverNow * 1000 - Date.now() : 0;
	function now() { return Date.now() + skew; }

	function pad(n) { return (n < 10 ? "0" : "") + n; }
	var zone = "";
	try {
		new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(new Date()).forEach(function (p) {
			if (p.type === "timeZoneName") { zone = " " + p.value; }
		});
	} catch (e) { /* no zone name: the times are still local */ }
	function local(d) {
		return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
			pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + zone;
	}
	function plural(n, unit) { return n + " " + unit + (n === 1 ? "" : "s"); }
	// relative says how far ms (a difference, positive in the future) is
	// from now, in the same words as the server.
	function relative(ms) {
		var s = Math.round(Math.abs(ms) / 1000), words;
		if (s < 1) { return "now"; }
		if (s < 60) { words = plural(s, "second"); }
		else if (s < 3600) { words = plural(Math.floor(s / 60), "minute"); }
		else if (s < 86400) { words = plural(Math.floor(s / 3600), "hour"); }
		else { words = plural(Math.floor(s / 86400), "day"); }
		return ms > 0 ? "in " + words : words + " ago";
	}
	function duration(s) {
		s = Math.max(0, Math.floor(s));
		var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
		function two(a, ua, b, ub) { return a + ua + (b > 0 ? " " + b + ub : ""); }
		if (d > 0) { return two(d, "d", h, "h"); }
		if (h > 0) { return two(h, "h", m, "m"); }
		if (m > 0) { return two(m, "m", s % 60, "s"); }
		return s + "s";
	}

	function refreshTimes(root) {
		var list = (root || document).querySelectorAll("time[datetime]");
		for (var i = 0; i < list.length; i++) {
			var el = list[i], t = Date.parse(el.getAttribute("datetime"));
			if (isNaN(t)) { continue; }
			if (!el.title) { el.title = new Date(t).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC"); }
			el.textContent = local(new Date(t)) + " (" + relative(t - now()) + ")";
		}
		var since = (root || document).querySelectorAll("[data-since]");
		for (var j = 0; j < since.length; j++) {
			since[j].textContent = duration(now() / 1000 - Number(since[j].getAttribute("data-since")));
		}
	}
	refreshTimes();
	setInterval(refreshTimes, 15000);

	// A button comes back to its page with its own id as the fragment:
	// the focus goes back to it, or to the button that took its place,
	// so that a keyboard goes on from the row it acted on. Where there
	// is none, as after Remove job, the focus goes to the message that
	// says what was done.
	var flash = document.getElementById("flash");
	if (flash) {
		var back = location.hash.length > 1 ? document.getElementById(location.hash.slice(1)) : null;
		if (back && back.tabIndex >= 0 && !back.disabled) { back.focus(); } else { flash.focus(); }
	}

	document.addEventListener("submit", function (e) {
		var q = e.target.getAttribute("data-confirm");
		if (q && !window.confirm(q)) { e.preventDefault(); }
	});

	// A running job's page asks for what its output gained since the last
	// time, by byte offset, and appends it as text: output is never HTML.
	var out = document.getElementById("output");
	if (!out || out.getAttribute("data-live") !== "1") { return; }
	var id = out.getAttribute("data-job");
	var offset = Number(out.getAttribute("data-offset")) || 0;
	function set(name, text) {
		var list = document.querySelectorAll("[data-field=" + name + "]");
		for (var i = 0; i < list.length; i++) { list[i].textContent = text; }
	}
	// A change of state is said in a live region, once: the badge that
	// shows it is not one, or every report would be read out.
	var news = document.getElementById("job-news");
	var state = (document.querySelector("[data-field=status]") || {}).textContent;
	function progress(text) {
		var p = document.getElementById("progress");
		if (!p) { return; }
		set("progress", text);
		p.hidden = !text;
		if (text) {
			var empty = document.getElementById("output-empty");
			if (empty) { empty.hidden = true; }
		}
	}
	function ended(j) {
		var show = document.querySelectorAll("[data-when=ended]");
		for (var k = 0; k < show.length; k++) { show[k].hidden = false; }
		var hide = document.querySelectorAll("[data-when=running]");
		for (var m = 0; m < hide.length; m++) { hide[m].hidden = true; }
		if (j.ended) {
			var e = document.querySelector("[data-field=ended]");
			if (e) {
				e.textContent = "";
				var t = document.createElement("time");
				t.setAttribute("datetime", new Date(j.ended * 1000).toISOString().replace(/\.\d+Z$/, "Z"));
				e.appendChild(t);
				refreshTimes(e);
			}
			set("duration", duration(j.ended - j.started));
			var since = document.querySelectorAll("[data-since]");
			for (var n = 0; n < since.length; n++) { since[n].removeAttribute("data-since"); }
		}
		out.setAttribute("data-live", "0");
	}
	function poll() {
		fetch("/1.0/job-output/" + encodeURIComponent(id) + "?offset=" + offset, { cache: "no-store", credentials: "same-origin" })
			.then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
			.then(function (j) {
				if (j.output) {
					var atEnd = out.scrollTop + out.clientHeight >= out.scrollHeight - 8;
					var empty = document.getElementById("output-empty");
					if (empty) { empty.hidden = true; }
					out.appendChild(document.createTextNode(j.output));
					if (atEnd) { out.scrollTop = out.scrollHeight; }
				}
				offset = j.next;
				progress(j.progress || "");
				if (j.status_text !== state) {
					state = j.status_text;
					if (news) { news.textContent = "Job " + id + " is " + state + (j.exit_text && j.status !== "running" ? ": exit " + j.exit_text : "") + "."; }
				}
				set("status", j.status_text);
				var st = document.querySelectorAll("[data-field=status]");
				for (var i = 0; i < st.length; i++) { st[i].className = "badge " + j.status_class; }
				set("exit", j.exit_text);
				set("output-size", j.output_size);
				set("disk-usage", j.disk_usage_text);
				set("kill", j.kill ? "yes, asked the minion to kill it" : "no");
				if (j.status === "running") {
					setTimeout(poll, 1000);
				} else {
					ended(j);
				}
			})
			.catch(function () { setTimeout(poll, 5000); });
	}
	setTimeout(poll, 1000);
})();
