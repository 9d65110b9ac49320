"use strict";
// Placeholder: the dashboard's pages follow.
document.getElementById("app").textContent = "jobgraph dashboard";
