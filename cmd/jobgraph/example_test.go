package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
)

// info prints a GRAPH.json's plan in the shape of Flink's GET /jobs/:jobid/plan, without a
// cluster.
func Example_info() {
	code := run(context.Background(), []string{"info", "testdata/wordcount.json"}, os.Stdout, os.Stderr)
	fmt.Println("exit code", code)
	// Output:
	// ----------------------- Execution Plan -----------------------
	// {
	//   "jid": "8ae3c1443d44142c861257df1fb2846c",
	//   "name": "wordcount",
	//   "type": "BATCH",
	//   "nodes": [
	//     {
	//       "id": "bc764cd8ddf7a0cff126f51c16239658",
	//       "parallelism": 2,
	//       "operator": "",
	//       "operator_strategy": "",
	//       "description": "Source: read <files>",
	//       "optimizer_properties": {}
	//     },
	//     {
	//       "id": "20ba6b65f97481d5570070de90e4e791",
	//       "parallelism": 2,
	//       "operator": "",
	//       "operator_strategy": "",
	//       "description": "count words",
	//       "inputs": [
	//         {
	//           "num": 0,
	//           "id": "bc764cd8ddf7a0cff126f51c16239658",
	//           "ship_strategy": "HASH",
	//           "exchange": "blocking"
	//         }
	//       ],
	//       "optimizer_properties": {}
	//     },
	//     {
	//       "id": "b5c8d46f3e7b141acf271f12622e752b",
	//       "parallelism": 1,
	//       "operator": "",
	//       "operator_strategy": "",
	//       "description": "Sink: print",
	//       "inputs": [
	//         {
	//           "num": 0,
	//           "id": "20ba6b65f97481d5570070de90e4e791",
	//           "ship_strategy": "REBALANCE",
	//           "exchange": "pipelined_bounded"
	//         }
	//       ],
	//       "optimizer_properties": {}
	//     }
	//   ]
	// }
	// --------------------------------------------------------------
	// exit code 0
}

// cancel against an endpoint that knows the job, then one that does not: exit code 1 and the
// server's "errors" under Flink's banner.
func Example_cancel() {
	const id = "8ae3c1443d44142c861257df1fb2846c"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch && r.URL.Path == "/jobs/"+id && r.URL.Query().Get("mode") == "cancel" {
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "{}")
			return
		}
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"errors":["Job `+r.URL.Path[len("/jobs/"):]+` not found"]}`)
	}))
	defer srv.Close()
	m := srv.Listener.Addr().String()

	fmt.Println("exit code", run(context.Background(), []string{"cancel", "-m", m, id}, os.Stdout, os.Stdout))
	fmt.Println("exit code", run(context.Background(), []string{"cancel", "-m", m, "fd72014d4c864993a2e5a9287b4a9c5d"}, os.Stdout, os.Stdout))
	// Output:
	// Cancelling job 8ae3c1443d44142c861257df1fb2846c.
	// Cancelled job 8ae3c1443d44142c861257df1fb2846c.
	// exit code 0
	// Cancelling job fd72014d4c864993a2e5a9287b4a9c5d.
	//
	// ------------------------------------------------------------
	//  The program finished with the following exception:
	//
	// Could not cancel job fd72014d4c864993a2e5a9287b4a9c5d.
	// Caused by: PATCH /jobs/fd72014d4c864993a2e5a9287b4a9c5d?mode=cancel: 404 Not Found: Job fd72014d4c864993a2e5a9287b4a9c5d not found
	// exit code 1
}
