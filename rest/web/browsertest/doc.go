// Package browsertest drives jobgraph's dashboard (package rest/web) in a real headless Chromium
// through github.com/chromedp/chromedp. It is a module of its own so that the core module keeps
// its short dependency list; it holds tests only. test.sh installs Chromium (chromium.sh) when no
// Chromium or Chrome binary is found.
package browsertest
