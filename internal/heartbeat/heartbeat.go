// Package heartbeat is the heartbeat manager every endpoint uses to notice that a peer is gone:
// Flink's HeartbeatManagerImpl (the receiving side), HeartbeatManagerSenderImpl (the side that
// asks for heartbeats) and HeartbeatMonitorImpl (one timeout per target) in one core.
//
// A Manager monitors targets, each named by a key (a ResourceID, mostly). Every heartbeat
// received from a target — or its answer to a request — resets that target's timeout; a target
// silent for the whole timeout is reported once to OnTimeout and is no longer monitored. A sender
// (Config.RequestHeartbeat set) asks every monitored target for a heartbeat once per interval.
//
// A target that is gone is usually noticed sooner than its timeout: the owner reports the result
// of every heartbeat RPC it makes to a target (the report function RequestHeartbeat is given, or
// TrackRPC's), and once RPCFailureThreshold of them in a row failed because the target could not
// be reached (rpc.IsUnreachable: a killed TaskExecutor, a peer whose process is gone — never a
// timeout, never an error the target answered with) the target is reported once to
// OnUnreachable, as lost, and is no longer monitored. A successful RPC starts the count over; a
// heartbeat received does not (Flink counts RPC results only). A result belongs to the monitoring
// of the target it was made under: one that comes back after the target was unmonitored, timed
// out or found unreachable — also when it is monitored again since — counts for nothing. This is
// Flink 1.14's FLINK-23209 (HeartbeatMonitor.reportHeartbeatRpcFailure / reportHeartbeatRpcSuccess),
// where a stale result would count for the new monitoring of the same ResourceID.
//
// Like the other cores, a Manager is a plain struct driven only from its owner's main loop: no
// locks, no goroutines, no I/O. Its timers fire onto that loop through Config.Timers
// (*mainloop.Loop satisfies it), and its callbacks run there; sending a heartbeat request is the
// owner's business (off the loop).
//
// Options (Flink's names and defaults): heartbeat.interval, DefaultHeartbeatInterval (10 s), how
// often a sender requests heartbeats; heartbeat.timeout, DefaultHeartbeatTimeout (50 s), how long
// a target may stay silent. The timeout must not be shorter than the interval;
// heartbeat.rpc-failure-threshold, DefaultRPCFailureThreshold (2), how many heartbeat RPCs to a
// target in a row may fail as unreachable before it is lost, RPCFailureDetectionDisabled (-1) to
// wait for the timeout only.
package heartbeat

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jobgraph/jobgraph/rpc"
)

const (
	// DefaultHeartbeatInterval is Flink's heartbeat.interval default: how often a sender asks
	// each target for a heartbeat.
	DefaultHeartbeatInterval = 10 * time.Second
	// DefaultHeartbeatTimeout is Flink's heartbeat.timeout default: a target silent this long is
	// considered gone.
	DefaultHeartbeatTimeout = 50 * time.Second
	// DefaultRPCFailureThreshold is Flink's heartbeat.rpc-failure-threshold default: a target is
	// lost once this many heartbeat RPCs to it in a row failed as unreachable.
	DefaultRPCFailureThreshold = 2
	// RPCFailureDetectionDisabled as heartbeat.rpc-failure-threshold turns the detection off: a
	// target is lost only when its heartbeat.timeout runs out. Flink: FAILED_RPC_DETECTION_DISABLED.
	RPCFailureDetectionDisabled = -1
)

// ErrTimeout is matched (errors.Is) by every *TimeoutError: rpc.ErrHeartbeatTimeout, exported
// there so users can name it.
var ErrTimeout = rpc.ErrHeartbeatTimeout

// TimeoutError is the cause endpoints give when a peer's heartbeat timed out: the exported
// rpc.HeartbeatTimeoutError, so errors.As finds it from outside the module's internals.
type TimeoutError = rpc.HeartbeatTimeoutError

// ErrUnreachable is matched (errors.Is) by every *UnreachableError:
// rpc.ErrHeartbeatTargetUnreachable.
var ErrUnreachable = rpc.ErrHeartbeatTargetUnreachable

// UnreachableError is the cause endpoints give when a peer was found unreachable (see
// Config.OnUnreachable): the exported rpc.HeartbeatTargetUnreachableError.
type UnreachableError = rpc.HeartbeatTargetUnreachableError

// Timers schedules fn to run on the owner's main loop after d; cancel stops it if it has not run
// yet and reports whether it did. *mainloop.Loop satisfies it.
type Timers interface {
	Schedule(d time.Duration, fn func()) (cancel func() bool)
}

// Config configures a Manager. Timers and OnTimeout are required, and OnUnreachable unless
// RPCFailureThreshold is RPCFailureDetectionDisabled.
type Config[K comparable] struct {
	// Timers runs the timeouts and the request ticks on the owner's main loop.
	Timers Timers
	// Interval is how often RequestHeartbeat is called for each target. Option heartbeat.interval,
	// default DefaultHeartbeatInterval (0 means the default). Only a sender uses it.
	Interval time.Duration
	// Timeout is how long a target may go without a heartbeat. Option heartbeat.timeout, default
	// DefaultHeartbeatTimeout (0 means the default); it must not be shorter than Interval.
	Timeout time.Duration
	// RPCFailureThreshold is how many heartbeat RPCs to a target in a row may fail as
	// unreachable (rpc.IsUnreachable) before the target is lost (OnUnreachable) without waiting
	// for Timeout. Option heartbeat.rpc-failure-threshold, default DefaultRPCFailureThreshold (0
	// means the default); RPCFailureDetectionDisabled (-1) turns it off; below -1 is an error.
	// Flink refuses 0; here it is the default, as for every option of these configs.
	RPCFailureThreshold int
	// RequestHeartbeat, if set, makes the Manager a sender: it is called on the loop for every
	// monitored target, in the order they were first monitored, once per Interval; the owner
	// sends the request off the loop, and the target's answer comes back as ReceiveHeartbeat.
	// The owner calls report on the loop, at most once, with the request RPC's error (nil when it
	// succeeded), as with TrackRPC. Flink: HeartbeatTarget.requestHeartbeat.
	RequestHeartbeat func(target K, report func(err error))
	// OnTimeout is called on the loop, once, for a target that was silent for Timeout; the target
	// is no longer monitored by then. It may call the Manager (monitor the target again, say).
	// Flink: HeartbeatListener.notifyHeartbeatTimeout.
	OnTimeout func(target K)
	// OnUnreachable is called on the loop, once, instead of OnTimeout, for a target whose last
	// RPCFailureThreshold heartbeat RPCs failed as unreachable, with the last of those errors;
	// the target is no longer monitored by then. Owners handle it as a timeout, with an
	// *UnreachableError as the cause. It may call the Manager. Flink:
	// HeartbeatListener.notifyTargetUnreachable.
	OnUnreachable func(target K, last error)
}

// Resolve applies the defaults to an interval and a timeout (0 means the default) and checks
// them: neither may be negative, and the timeout must not be shorter than the interval (Flink's
// HeartbeatServices rule). Endpoints call it to reject a bad configuration when they are created.
func Resolve(interval, timeout time.Duration) (time.Duration, time.Duration, error) {
	if interval < 0 || timeout < 0 {
		return 0, 0, fmt.Errorf("heartbeat: heartbeat.interval %v and heartbeat.timeout %v must not be negative", interval, timeout)
	}
	if interval == 0 {
		interval = DefaultHeartbeatInterval
	}
	if timeout == 0 {
		timeout = DefaultHeartbeatTimeout
	}
	if timeout < interval {
		return 0, 0, fmt.Errorf("heartbeat: heartbeat.timeout %v is shorter than heartbeat.interval %v", timeout, interval)
	}
	return interval, timeout, nil
}

// ResolveRPCFailureThreshold applies the default to heartbeat.rpc-failure-threshold (0 means
// DefaultRPCFailureThreshold) and checks it: a positive number of failed heartbeat RPCs, or
// RPCFailureDetectionDisabled (-1). Endpoints call it to reject a bad configuration when they
// are created. Flink: HeartbeatServicesImpl's check ("has to be larger than 0 or -1").
func ResolveRPCFailureThreshold(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultRPCFailureThreshold, nil
	case n < RPCFailureDetectionDisabled:
		return 0, fmt.Errorf("heartbeat: heartbeat.rpc-failure-threshold %d: want a positive number of failed heartbeat RPCs, or -1 to turn the detection off", n)
	}
	return n, nil
}

// Manager monitors heartbeat targets; see the package documentation. Use it only from the
// owner's main loop.
type Manager[K comparable] struct {
	timers        Timers
	interval      time.Duration
	timeout       time.Duration
	threshold     int // resolved; RPCFailureDetectionDisabled for none
	request       func(K, func(error))
	onTimeout     func(K)
	onUnreachable func(K, error)

	targets map[K]*target[K]
	// order holds the monitored targets in the order they were first monitored, and targets
	// removed since the last compaction (removed set, dead of them): Unmonitor marks instead of
	// deleting from the slice, so it costs O(1) amortized, not O(targets).
	order   []*target[K]
	dead    int
	ticking bool
	stopTck func() bool
	stopped bool
}

// target is one monitoring of a target, from Monitor until it is removed (a later Monitor of the
// same key makes a new one): its pending timeout and that timeout's generation, so a timeout that
// was already posted when it was reset does nothing, and the unreachable heartbeat RPCs in a row
// since the last one that succeeded. The report functions of RPCs hold it, so a result of an
// earlier monitoring finds it removed.
type target[K comparable] struct {
	key      K
	cancel   func() bool
	gen      uint64
	failures int
	removed  bool
}

// New returns a Manager monitoring nothing.
func New[K comparable](cfg Config[K]) (*Manager[K], error) {
	if cfg.Timers == nil {
		return nil, errors.New("heartbeat: Config.Timers is nil")
	}
	if cfg.OnTimeout == nil {
		return nil, errors.New("heartbeat: Config.OnTimeout is nil")
	}
	interval, timeout, err := Resolve(cfg.Interval, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	threshold, err := ResolveRPCFailureThreshold(cfg.RPCFailureThreshold)
	if err != nil {
		return nil, err
	}
	if cfg.OnUnreachable == nil && threshold != RPCFailureDetectionDisabled {
		return nil, errors.New("heartbeat: Config.OnUnreachable is nil and heartbeat.rpc-failure-threshold is not -1")
	}
	return &Manager[K]{
		timers:        cfg.Timers,
		interval:      interval,
		timeout:       timeout,
		threshold:     threshold,
		request:       cfg.RequestHeartbeat,
		onTimeout:     cfg.OnTimeout,
		onUnreachable: cfg.OnUnreachable,
		targets:       make(map[K]*target[K]),
	}, nil
}

// Interval returns heartbeat.interval as resolved.
func (m *Manager[K]) Interval() time.Duration { return m.interval }

// Timeout returns heartbeat.timeout as resolved.
func (m *Manager[K]) Timeout() time.Duration { return m.timeout }

// RPCFailureThreshold returns heartbeat.rpc-failure-threshold as resolved
// (RPCFailureDetectionDisabled when off).
func (m *Manager[K]) RPCFailureThreshold() int { return m.threshold }

// TrackRPC is called on the loop when the owner makes a heartbeat RPC to k other than the
// requests RequestHeartbeat is called for (a receiver's answer to a request, say): the
// returned function, called on the loop at most once with the RPC's error (nil on success),
// counts the result toward k's RPCFailureThreshold, for the monitoring of k under way now. It
// does nothing for a k that is not monitored, or once k is no longer monitored under that
// monitoring. Flink: HeartbeatManagerImpl.handleHeartbeatRpc.
func (m *Manager[K]) TrackRPC(k K) (report func(err error)) {
	t, ok := m.targets[k]
	if !ok || m.stopped {
		return func(error) {}
	}
	return func(err error) { m.rpcDone(t, err) }
}

// Monitor starts monitoring k: OnTimeout follows unless a heartbeat from k arrives within the
// timeout, and a sender requests heartbeats from k from its next tick on. Monitoring a target
// already monitored counts as a heartbeat from it. Flink: HeartbeatManager.monitorTarget.
func (m *Manager[K]) Monitor(k K) {
	if m.stopped {
		return
	}
	t, ok := m.targets[k]
	if !ok {
		t = &target[K]{key: k}
		m.targets[k] = t
		m.order = append(m.order, t)
	}
	m.arm(k, t)
	if m.request != nil && !m.ticking {
		m.ticking = true
		m.stopTck = m.timers.Schedule(m.interval, m.tick)
	}
}

// Unmonitor stops monitoring k and reports whether it was monitored. Flink: unmonitorTarget.
func (m *Manager[K]) Unmonitor(k K) bool {
	t, ok := m.targets[k]
	if !ok {
		return false
	}
	m.remove(k, t)
	return true
}

// ReceiveHeartbeat records a heartbeat from k (a heartbeat it sent, or its answer to a request):
// k's timeout starts over. It reports whether k is monitored; a heartbeat from a target that is
// not is ignored. Flink: HeartbeatManager.receiveHeartbeat / requestHeartbeat (reportHeartbeat).
func (m *Manager[K]) ReceiveHeartbeat(k K) bool {
	t, ok := m.targets[k]
	if !ok || m.stopped {
		return false
	}
	m.arm(k, t)
	return true
}

// IsMonitored reports whether k is monitored.
func (m *Manager[K]) IsMonitored(k K) bool {
	_, ok := m.targets[k]
	return ok
}

// Targets returns the monitored targets, in the order they were first monitored.
func (m *Manager[K]) Targets() []K {
	out := make([]K, 0, len(m.targets))
	for _, t := range m.order {
		if !t.removed {
			out = append(out, t.key)
		}
	}
	return out
}

// Stop unmonitors every target and cancels every timer: no callback runs afterwards, and Monitor
// does nothing. Stopping twice is harmless. Flink: HeartbeatManager.stop.
func (m *Manager[K]) Stop() {
	if m.stopped {
		return
	}
	m.stopped = true
	for k, t := range m.targets {
		m.remove(k, t)
	}
	if m.stopTck != nil {
		m.stopTck()
		m.stopTck = nil
	}
	m.ticking = false
}

// arm (re)starts t's timeout.
func (m *Manager[K]) arm(k K, t *target[K]) {
	if t.cancel != nil {
		t.cancel()
	}
	t.gen++
	gen := t.gen
	t.cancel = m.timers.Schedule(m.timeout, func() { m.timedOut(k, t, gen) })
}

func (m *Manager[K]) remove(k K, t *target[K]) {
	if t.cancel != nil {
		t.cancel()
		t.cancel = nil
	}
	t.gen++
	delete(m.targets, k)
	t.removed = true
	m.dead++
	if m.dead > len(m.order)/2 {
		// Compact once more than half is dead: each removal pays O(1) amortized.
		m.order = slices.DeleteFunc(m.order, func(t *target[K]) bool { return t.removed })
		m.dead = 0
	}
}

// rpcDone counts the result of a heartbeat RPC made to t's target under monitoring t: a success
// starts the count over, an unreachable failure adds one (OnUnreachable at the threshold),
// anything else — a timeout, an error the target answered with — changes nothing. A result for
// a monitoring that ended (t removed; the key may be monitored again by a newer t) is dropped.
func (m *Manager[K]) rpcDone(t *target[K], err error) {
	if m.stopped || t.removed {
		return
	}
	if err == nil {
		t.failures = 0
		return
	}
	if m.threshold == RPCFailureDetectionDisabled || !rpc.IsUnreachable(err) {
		return
	}
	t.failures++
	if t.failures < m.threshold {
		return
	}
	m.remove(t.key, t)
	m.onUnreachable(t.key, err)
}

func (m *Manager[K]) timedOut(k K, t *target[K], gen uint64) {
	if m.stopped || m.targets[k] != t || t.gen != gen {
		return
	}
	m.remove(k, t)
	m.onTimeout(k)
}

// tick requests a heartbeat from every target and schedules the next tick while any is left.
// Flink: HeartbeatManagerSenderImpl.run.
func (m *Manager[K]) tick() {
	m.stopTck = nil
	if m.stopped || len(m.targets) == 0 {
		m.ticking = false
		return
	}
	// Requests may change what is monitored; a target unmonitored by an earlier request is
	// skipped, one monitored meanwhile waits for the next tick.
	for _, t := range slices.Clone(m.order) {
		if m.stopped {
			return
		}
		if !t.removed {
			m.request(t.key, func(err error) { m.rpcDone(t, err) })
		}
	}
	if m.stopped {
		return
	}
	m.stopTck = m.timers.Schedule(m.interval, m.tick)
}
