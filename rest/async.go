package rest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
)

// operationKey names an asynchronous operation: its job and trigger ID (Flink's
// AsynchronousJobOperationKey).
type operationKey struct {
	job     jobgraph.JobID
	trigger string
}

// operation is one savepoint or stop-with-savepoint. location and err are written before done
// is closed; completed is written under operations.mu.
type operation struct {
	done      chan struct{}
	location  string
	err       error
	completed time.Time // zero while running
}

// operations keeps the asynchronous operations and owns their goroutines (Flink:
// CompletedOperationCache with the handlers' trigger futures). A completed operation stays for
// rest.async.store-duration after it completed; expired ones are dropped on the next access.
type operations struct {
	storeFor time.Duration
	ctx      context.Context // canceled by close: every operation's context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu     sync.Mutex
	byKey  map[operationKey]*operation
	closed bool
}

func newOperations(storeFor time.Duration) *operations {
	ctx, cancel := context.WithCancel(context.Background())
	return &operations{storeFor: storeFor, ctx: ctx, cancel: cancel, byKey: map[operationKey]*operation{}}
}

// errHandlerClosed answers an operation triggered once the Handler is closing.
var errHandlerClosed = errors.New("rest: the REST handler is closed")

// expire drops completed operations past the store duration; under mu.
func (o *operations) expire(now time.Time) {
	for k, op := range o.byKey {
		if !op.completed.IsZero() && now.Sub(op.completed) >= o.storeFor {
			delete(o.byKey, k)
		}
	}
}

// start runs fn on a goroutine of its own under key, unless an operation with that key exists
// already: then it starts nothing and reports existed. Errors: errHandlerClosed after close.
func (o *operations) start(key operationKey, fn func(ctx context.Context) (string, error)) (existed bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false, errHandlerClosed
	}
	o.expire(time.Now())
	if _, ok := o.byKey[key]; ok {
		return true, nil
	}
	op := &operation{done: make(chan struct{})}
	o.byKey[key] = op
	o.wg.Go(func() {
		loc, err := fn(o.ctx)
		op.location, op.err = loc, err
		close(op.done)
		o.mu.Lock()
		op.completed = time.Now()
		o.mu.Unlock()
	})
	return false, nil
}

// get returns the operation under key, or nil.
func (o *operations) get(key operationKey) *operation {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.expire(time.Now())
	return o.byKey[key]
}

// close cancels every operation's context and waits for their goroutines.
func (o *operations) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.cancel()
	o.wg.Wait()
}

// newTriggerID is a random 32-hex-digit trigger ID (Flink's TriggerId).
func newTriggerID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// parseTriggerID checks a trigger ID: 32 hexadecimal digits.
func parseTriggerID(s string) (string, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 16 {
		return "", fmt.Errorf("trigger ID %q is not 32 hexadecimal digits", s)
	}
	return hex.EncodeToString(b), nil
}

// triggerResponse is Flink's TriggerResponse.
type triggerResponse struct {
	RequestID string `json:"request-id"`
}

// savepointTriggerRequest is Flink's SavepointTriggerRequestBody; stopRequest its
// StopWithSavepointRequestBody.
type savepointTriggerRequest struct {
	TargetDirectory string `json:"target-directory"`
	CancelJob       bool   `json:"cancel-job"`
	TriggerID       string `json:"triggerId"`
	FormatType      string `json:"formatType"`
}

type stopRequest struct {
	TargetDirectory string `json:"targetDirectory"`
	Drain           bool   `json:"drain"`
	TriggerID       string `json:"triggerId"`
	FormatType      string `json:"formatType"`
}

// decodeBody reads an optional JSON body into v, answering 413 or 400 (naming the problem).
func (h *Handler) decodeBody(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	data, ok := h.readBody(w, r)
	if !ok {
		return false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return true
	}
	if err := json.Unmarshal(data, v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Bad request, the body is not a %s: %v", what, err))
		return false
	}
	return true
}

// trigger starts an asynchronous operation on a job that exists (404 otherwise) and answers 202
// with its trigger ID.
func (h *Handler) trigger(w http.ResponseWriter, r *http.Request, id jobgraph.JobID, triggerID string, fn func(ctx context.Context) (string, error)) {
	if triggerID == "" {
		triggerID = newTriggerID()
	} else {
		t, err := parseTriggerID(triggerID)
		if err != nil {
			writeError(w, http.StatusBadRequest, "Bad request, "+err.Error())
			return
		}
		triggerID = t
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	if _, err := h.cfg.Dispatcher.RequestJobStatus(ctx, id); err != nil {
		h.fail(w, r, err)
		return
	}
	if _, err := h.ops.start(operationKey{id, triggerID}, fn); err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, triggerResponse{RequestID: triggerID})
}

// postSavepoint triggers a savepoint (and cancels the job after it with "cancel-job").
func (h *Handler) postSavepoint(w http.ResponseWriter, r *http.Request, p params) {
	id, ok := jobID(w, p)
	if !ok {
		return
	}
	var req savepointTriggerRequest
	if !h.decodeBody(w, r, &req, "SavepointTriggerRequestBody") {
		return
	}
	d := h.cfg.Dispatcher
	h.trigger(w, r, id, req.TriggerID, func(ctx context.Context) (string, error) {
		loc, err := d.TriggerSavepoint(ctx, id, req.TargetDirectory)
		if err == nil && req.CancelJob {
			if cerr := d.CancelJob(ctx, id); cerr != nil {
				return "", fmt.Errorf("savepoint %s completed, canceling the job failed: %w", loc, cerr)
			}
		}
		return loc, err
	})
}

// postStop stops the job with a savepoint.
func (h *Handler) postStop(w http.ResponseWriter, r *http.Request, p params) {
	id, ok := jobID(w, p)
	if !ok {
		return
	}
	var req stopRequest
	if !h.decodeBody(w, r, &req, "StopWithSavepointRequestBody") {
		return
	}
	if req.Drain {
		writeError(w, http.StatusBadRequest, `Bad request, "drain" is not supported: jobgraph has no watermarks to advance before the savepoint; stop without it.`)
		return
	}
	d := h.cfg.Dispatcher
	h.trigger(w, r, id, req.TriggerID, func(ctx context.Context) (string, error) {
		return d.StopWithSavepoint(ctx, id, req.TargetDirectory)
	})
}

// asynchronousOperationResult is Flink's AsynchronousOperationResult with a SavepointInfo.
type asynchronousOperationResult struct {
	Status    queueStatus    `json:"status"`
	Operation *savepointInfo `json:"operation,omitempty"`
}

type queueStatus struct {
	ID string `json:"id"`
}

type savepointInfo struct {
	Location     string        `json:"location,omitempty"`
	FailureCause *failureCause `json:"failure-cause,omitempty"`
}

// failureCause stands for Flink's SerializedThrowable: the error's first registered code (or
// "error") as its class and its text as its stack trace.
type failureCause struct {
	Class      string `json:"class"`
	StackTrace string `json:"stack-trace"`
}

func causeOf(err error) *failureCause {
	class := "error"
	if codes := jobgraph.ErrorCodes(err); len(codes) > 0 {
		class = codes[0]
	}
	return &failureCause{Class: class, StackTrace: err.Error()}
}

func (h *Handler) getSavepoint(w http.ResponseWriter, r *http.Request, p params) {
	id, ok := jobID(w, p)
	if !ok {
		return
	}
	trigger, err := parseTriggerID(p["triggerid"])
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad request, could not parse parameters: "+err.Error())
		return
	}
	op := h.ops.get(operationKey{id, trigger})
	if op == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("There is no savepoint operation with trigger ID %s for job %s (or its result expired after rest.async.store-duration).", trigger, id))
		return
	}
	select {
	case <-op.done:
	default:
		writeJSON(w, http.StatusOK, asynchronousOperationResult{Status: queueStatus{ID: "IN_PROGRESS"}})
		return
	}
	info := &savepointInfo{Location: op.location}
	if op.err != nil {
		info = &savepointInfo{FailureCause: causeOf(op.err)}
	}
	writeJSON(w, http.StatusOK, asynchronousOperationResult{Status: queueStatus{ID: "COMPLETED"}, Operation: info})
}
