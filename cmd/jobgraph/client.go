package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// client speaks Flink's REST API v1 (the paths and JSON field names of apache/flink
// docs/static/generated/rest_v1_dispatcher.yml) to one JobManager.
type client struct {
	base    *url.URL // scheme and host:port
	http    *http.Client
	timeout time.Duration // each request's; Flink's client.timeout
}

// restError is a request the server refused (an HTTP status not 2xx): Flink's
// ErrorResponseBody "errors" array, or the start of the body when it is not that shape.
type restError struct {
	method, path string
	status       int
	errors       []string
}

func (e *restError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.status, http.StatusText(e.status))
	if len(e.errors) > 0 {
		msg += ": " + strings.Join(e.errors, "\n")
	}
	return msg
}

// jobManagerURL turns -m/--jobmanager's host:port (Flink's rest.address and rest.port) into the
// endpoint's base URL: http unless TLS is asked for or the value already names a scheme
// (http:// or https://). A missing port is Flink's rest.port default, 8081.
func jobManagerURL(address string, useTLS bool) (*url.URL, error) {
	raw := address
	if !strings.Contains(raw, "://") {
		scheme := "http"
		if useTLS {
			scheme = "https"
		}
		raw = scheme + "://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || (u.Path != "" && u.Path != "/") {
		return nil, argsErrorf("-m/--jobmanager %q is not host:port", address)
	}
	if useTLS && u.Scheme == "http" {
		return nil, argsErrorf("-m/--jobmanager %q names http, but TLS options were given", address)
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), defaultPort)
	}
	u.Path = ""
	return u, nil
}

// tlsConfig builds the client side of security.ssl.rest.*: the CA certificates (PEM) that sign
// the server's certificate, and a client certificate and key (PEM) for a server that
// authenticates its clients (security.ssl.rest.authentication-enabled). Empty names are not used;
// with neither, nil (the system's roots apply to an https:// address).
func tlsConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, argsErrorf("--tls-cert and --tls-key go together")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// do sends one request (body, if not nil, as JSON) and decodes a 2xx answer's JSON into out
// (unless nil). A non-2xx answer is a *restError.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case []byte:
			rd = bytes.NewReader(b)
		default:
			data, err := json.Marshal(body)
			if err != nil {
				return err
			}
			rd = bytes.NewReader(data)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is said here, unquoted
		}
		return fmt.Errorf("%s %s%s: %w", method, c.base, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &restError{method: method, path: path, status: resp.StatusCode}
		var eb struct {
			Errors []string `json:"errors"`
		}
		if json.Unmarshal(data, &eb) == nil && len(eb.Errors) > 0 {
			e.errors = eb.Errors
		} else if s := strings.TrimSpace(string(data)); s != "" {
			e.errors = []string{truncate(s, 500)}
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, path, err)
	}
	return nil
}

// maxResponse bounds what is read of one answer (a job list of many jobs stays far below).
const maxResponse = 64 << 20

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// jobDetails is one job of GET /jobs/overview (Flink's JobDetails; the fields used).
type jobDetails struct {
	JID       string `json:"jid"`
	Name      string `json:"name"`
	State     string `json:"state"`
	StartTime int64  `json:"start-time"`
}

// listJobs is GET /jobs/overview (Flink's RestClusterClient.listJobs).
func (c *client) listJobs(ctx context.Context) ([]jobDetails, error) {
	var body struct {
		Jobs []jobDetails `json:"jobs"`
	}
	if err := c.do(ctx, http.MethodGet, "/jobs/overview", nil, &body); err != nil {
		return nil, err
	}
	return body.Jobs, nil
}

// submitJob is POST /jobs with the graph's JSON; it returns the answer's jobUrl.
func (c *client) submitJob(ctx context.Context, graph []byte) (string, error) {
	var body struct {
		JobURL string `json:"jobUrl"`
	}
	if err := c.do(ctx, http.MethodPost, "/jobs", graph, &body); err != nil {
		return "", err
	}
	return body.JobURL, nil
}

// cancelJob is PATCH /jobs/:jobid?mode=cancel.
func (c *client) cancelJob(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPatch, "/jobs/"+url.PathEscape(id)+"?mode=cancel", nil, nil)
}

// jobInfo is what run's wait reads of GET /jobs/:jobid (Flink's JobDetailsInfo).
type jobInfo struct {
	State    string `json:"state"`
	Duration int64  `json:"duration"`
}

func (c *client) job(ctx context.Context, id string) (jobInfo, error) {
	var j jobInfo
	err := c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(id), nil, &j)
	return j, err
}

// rootException is GET /jobs/:jobid/exceptions' root-exception ("" when none).
func (c *client) rootException(ctx context.Context, id string) (string, error) {
	var body struct {
		RootException string `json:"root-exception"`
	}
	err := c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(id)+"/exceptions", nil, &body)
	return body.RootException, err
}

// triggerSavepoint is POST /jobs/:jobid/savepoints (Flink's SavepointTriggerRequestBody); it
// returns the trigger ID ("request-id").
func (c *client) triggerSavepoint(ctx context.Context, id, dir string) (string, error) {
	req := map[string]any{"cancel-job": false}
	if dir != "" {
		req["target-directory"] = dir
	}
	return c.trigger(ctx, "/jobs/"+url.PathEscape(id)+"/savepoints", req)
}

// stopWithSavepoint is POST /jobs/:jobid/stop (Flink's StopWithSavepointRequestBody); it returns
// the trigger ID, polled like a savepoint's.
func (c *client) stopWithSavepoint(ctx context.Context, id, dir string) (string, error) {
	req := map[string]any{"drain": false}
	if dir != "" {
		req["targetDirectory"] = dir
	}
	return c.trigger(ctx, "/jobs/"+url.PathEscape(id)+"/stop", req)
}

func (c *client) trigger(ctx context.Context, path string, req any) (string, error) {
	var body struct {
		RequestID string `json:"request-id"`
	}
	if err := c.do(ctx, http.MethodPost, path, req, &body); err != nil {
		return "", err
	}
	if body.RequestID == "" {
		return "", fmt.Errorf("POST %s: the answer holds no request-id", path)
	}
	return body.RequestID, nil
}

// operationFailedError is an asynchronous operation that COMPLETED with a failure-cause.
type operationFailedError struct{ cause string }

func (e *operationFailedError) Error() string { return e.cause }

// awaitSavepoint polls GET /jobs/:jobid/savepoints/:triggerid until its status is COMPLETED and
// returns the operation's location, or its failure-cause as an *operationFailedError. It waits
// pollInitial, doubling up to pollMax, between polls (Flink's RestClusterClient polls with an
// ExponentialWaitStrategy of 10 ms to 2 s), for at most timeout (client.timeout) in all.
func (c *client) awaitSavepoint(ctx context.Context, id, trigger string, pollInitial, pollMax, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	path := "/jobs/" + url.PathEscape(id) + "/savepoints/" + url.PathEscape(trigger)
	wait := pollInitial
	for {
		var body struct {
			Status struct {
				ID string `json:"id"`
			} `json:"status"`
			Operation struct {
				Location     string          `json:"location"`
				FailureCause json.RawMessage `json:"failure-cause"`
			} `json:"operation"`
		}
		if err := c.do(ctx, http.MethodGet, path, nil, &body); err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return "", fmt.Errorf("no result after %v (client.timeout): %w", timeout, err)
			}
			return "", err
		}
		switch body.Status.ID {
		case "COMPLETED":
			if cause := failureCause(body.Operation.FailureCause); cause != "" {
				return "", &operationFailedError{cause}
			}
			if body.Operation.Location == "" {
				return "", fmt.Errorf("GET %s: COMPLETED without a location or a failure-cause", path)
			}
			return body.Operation.Location, nil
		case "IN_PROGRESS":
		default:
			return "", fmt.Errorf("GET %s: unknown status %q", path, body.Status.ID)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if ctx.Err() == context.DeadlineExceeded {
				return "", fmt.Errorf("still IN_PROGRESS after %v (client.timeout)", timeout)
			}
			return "", ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, pollMax)
	}
}

// failureCause reads Flink's SerializedThrowable JSON ("class", "stack-trace",
// "serialized-throwable"; a server may add "message"): the stack trace, else the message, else
// the class; a JSON string as it is; anything else as its JSON text. null or absent gives "".
func failureCause(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"stack-trace", "message", "class"} {
			if v, ok := m[k].(string); ok && v != "" {
				return strings.TrimRight(v, "\n")
			}
		}
	}
	return string(raw)
}
