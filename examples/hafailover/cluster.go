package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jobgraph/jobgraph/examples/streaming/keyedsum"
)

// jobManager is one JobManager process the parent started.
type jobManager struct {
	name     string
	cmd      *exec.Cmd
	replaces string // the killed process this one replaced, if any
	killed   bool
	stdin    io.WriteCloser // acknowledges each checkpoint (-ack-checkpoints)
	// latest is the newest checkpoint this process reported completed.
	latest int64
}

// event is a line a JobManager process printed, or its exit (exited, with err).
type event struct {
	jm     *jobManager
	at     time.Duration
	line   string
	exited bool
	err    error
}

// takeover is one kill of a leader and what the next leader did.
type takeover struct {
	Killed string // the process killed
	// KilledLatest is the newest checkpoint the killed leader reported completed before the kill.
	KilledLatest int64
	// Leader is the process that led next, and Restored the checkpoint its JobMaster restored
	// (0: none).
	Leader   string
	Restored int64
	// KilledAt, LeadAt and RestoredAt are the parent's clock at the kill, at the next leader's
	// grant and when it reported the restore of its JobMaster (once the job was RUNNING again).
	KilledAt, LeadAt, RestoredAt time.Duration
}

// clusterOutcome is what runCluster saw.
type clusterOutcome struct {
	Kills     int
	Takeovers []takeover
	// Leaders are the processes in the order they were granted the leadership.
	Leaders []string
	// Finished is the process whose JobMaster finished the job; Results maps every process
	// that exited by itself to the application result it printed.
	Finished string
	Results  map[string]string
	Summary  keyedsum.Summary
	Elapsed  time.Duration
}

// runCluster is the parent: it starts the HA backend and two JobManager processes, kills the
// leader o.kills times once o.checkpoints checkpoints completed under it, starting a new
// standby after each takeover, waits until every process exited, and checks the output.
func runCluster(ctx context.Context, o options, stdout io.Writer) (clusterOutcome, error) {
	var r clusterOutcome
	if err := checkOutDir(o.out); err != nil {
		return r, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return r, err
	}
	self, err := os.Executable()
	if err != nil {
		return r, fmt.Errorf("finding this program to start the JobManager processes: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	backend := ""
	switch o.ha {
	case haFile:
		if o.haDir == "" {
			dir, err := os.MkdirTemp("", "hafailover-")
			if err != nil {
				return r, err
			}
			defer os.RemoveAll(dir)
			o.haDir = dir
		}
		backend = "ha/file in " + o.haDir
	case haEtcd:
		srv, err := startEtcd()
		if err != nil {
			return r, err
		}
		defer srv.close()
		o.etcdEndpoints = srv.endpoint
		backend = fmt.Sprintf("ha/etcd on the etcd server at %s (data in %s), leases of %v", srv.endpoint, srv.dir, o.etcdSessionTTL)
	}
	fmt.Fprintf(stdout, "hafailover: records 1..%d, %d keys, parallelism %d, checkpoints every %v, %v records/s; 2 JobManager processes over %s; "+
		"SIGKILL the leader %s, each after %s under it\n",
		o.records, o.keys, o.parallelism, o.checkpointInterval, o.rate, backend, count(o.kills, "time"), count(o.checkpoints, "checkpoint"))

	start := time.Now()
	events := make(chan event)
	running := map[*jobManager]bool{}
	numbered := 0
	var startErr error
	launch := func(replaces string) *jobManager {
		numbered++
		jm := &jobManager{name: fmt.Sprintf("jobmanager-%d", numbered), replaces: replaces}
		if err := jm.start(self, o.jobManagerArgs(jm.name), start, events); err != nil {
			startErr = errors.Join(startErr, err)
			return nil
		}
		running[jm] = true
		note := ""
		if replaces != "" {
			note = ", the next standby in place of " + replaces
		}
		fmt.Fprintf(stdout, "%8s  %s: started (pid %d%s)\n", time.Since(start).Round(time.Millisecond), jm.name, jm.cmd.Process.Pid, note)
		return jm
	}
	// Whatever happens, no JobManager process outlives the parent.
	defer func() {
		for jm := range running {
			_ = jm.cmd.Process.Kill()
		}
		for len(running) > 0 {
			if ev := <-events; ev.exited {
				delete(running, ev.jm)
			}
		}
	}()

	// The first process starts alone, so that it leads; the second once it does.
	launch("")
	var (
		leader       *jobManager
		sinceGrant   int // checkpoints completed under the leader since its grant
		pendingTake  *takeover
		quietCps     int  // checkpoints not printed (after the last kill)
		second       bool // the second process was started
		firstFailure error
	)
	r.Results = map[string]string{}
	for len(running) > 0 && startErr == nil {
		var ev event
		select {
		case ev = <-events:
		case <-ctx.Done():
			return r, fmt.Errorf("%w: %d kills of %d, %d processes running", ctx.Err(), r.Kills, o.kills, len(running))
		}
		jm := ev.jm
		if ev.exited {
			delete(running, jm)
			switch {
			case jm.killed:
				fmt.Fprintf(stdout, "%8s  %s: killed (%v)\n", ev.at.Round(time.Millisecond), jm.name, ev.err)
			case ev.err != nil:
				fmt.Fprintf(stdout, "%8s  %s: exited: %v\n", ev.at.Round(time.Millisecond), jm.name, ev.err)
				if firstFailure == nil {
					firstFailure = fmt.Errorf("%s exited: %w", jm.name, ev.err)
					// The others would wait forever for a leader that is gone.
					for other := range running {
						_ = other.cmd.Process.Kill()
					}
				}
			default:
				fmt.Fprintf(stdout, "%8s  %s: exited\n", ev.at.Round(time.Millisecond), jm.name)
			}
			continue
		}
		line, at := ev.line, ev.at.Round(time.Millisecond)
		isCheckpoint := strings.HasPrefix(line, evCheckpoint)
		if isCheckpoint && r.Kills == o.kills {
			quietCps++ // the kills are done: the rest of the run's checkpoints are only counted
		} else {
			fmt.Fprintf(stdout, "%8s  %s: %s\n", at, jm.name, line)
		}
		switch {
		case strings.HasPrefix(line, evLeader):
			leader, sinceGrant = jm, 0
			r.Leaders = append(r.Leaders, jm.name)
			switch {
			case !second:
				second = true
				launch("")
			case pendingTake != nil:
				pendingTake.Leader, pendingTake.LeadAt = jm.name, ev.at
				launch(pendingTake.Killed)
			}
		case isCheckpoint:
			id, _ := strconv.ParseInt(field(line, evCheckpoint), 10, 64)
			jm.latest = max(jm.latest, id)
			if jm == leader && r.Kills < o.kills && pendingTake == nil {
				sinceGrant++
			}
			if jm != leader || r.Kills == o.kills || pendingTake != nil || sinceGrant < o.checkpoints {
				// The process waits for this before it stores its next checkpoint (-ack-checkpoints).
				if err := jm.ack(); err != nil {
					fmt.Fprintf(stdout, "%8s  %s: acknowledging its checkpoint: %v\n", at, jm.name, err)
				}
				break
			}
			// SIGKILL while the process waits for the acknowledgement of checkpoint id: no
			// checkpoint after it is stored, and no goodbye; the backend notices the process is
			// gone (ha/file: the kernel releases its flock; ha/etcd: its lease expires).
			jm.killed = true
			if err := jm.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				return r, fmt.Errorf("killing %s: %w", jm.name, err)
			}
			r.Kills++
			killedAt := time.Since(start)
			fmt.Fprintf(stdout, "%8s  %s: SIGKILL (the leader; kill %d of %d)\n", killedAt.Round(time.Millisecond), jm.name, r.Kills, o.kills)
			pendingTake = &takeover{Killed: jm.name, KilledLatest: jm.latest, KilledAt: killedAt}
			leader = nil
		case strings.HasPrefix(line, evRestored), line == evNothing:
			if t := pendingTake; t != nil && t.Leader == jm.name {
				t.Restored, _ = strconv.ParseInt(field(line, evRestored), 10, 64)
				t.RestoredAt = ev.at
				r.Takeovers = append(r.Takeovers, *t)
				pendingTake = nil
			}
		case line == evJob+"FINISHED":
			r.Finished = jm.name
		case strings.HasPrefix(line, evResult):
			r.Results[jm.name] = strings.TrimPrefix(line, evResult)
		}
	}
	r.Elapsed = time.Since(start)
	if startErr != nil {
		return r, startErr
	}
	if firstFailure != nil {
		return r, firstFailure
	}
	if quietCps > 0 {
		fmt.Fprintf(stdout, "          (%s after the last kill not shown)\n", count(quietCps, "completed checkpoint"))
	}

	fmt.Fprintf(stdout, "\ntakeovers:\n")
	var errs []error
	for _, t := range r.Takeovers {
		fmt.Fprintf(stdout, "  %s killed at %s (its latest checkpoint %d) → %s leads after %s and runs the job from checkpoint %[7]d after %[6]s\n",
			t.Killed, t.KilledAt.Round(time.Millisecond), t.KilledLatest, t.Leader,
			(t.LeadAt - t.KilledAt).Round(time.Millisecond), (t.RestoredAt - t.KilledAt).Round(time.Millisecond), t.Restored)
		if t.Restored != t.KilledLatest {
			errs = append(errs, fmt.Errorf("%s restored checkpoint %d, not %d, the latest %s completed", t.Leader, t.Restored, t.KilledLatest, t.Killed))
		}
	}
	if r.Kills < o.kills {
		errs = append(errs, fmt.Errorf("the job finished after %d of %d kills: give it more -records or a lower -rate", r.Kills, o.kills))
	}
	if len(r.Takeovers) != r.Kills {
		errs = append(errs, fmt.Errorf("%d kills, but %d takeovers ran the job again", r.Kills, len(r.Takeovers)))
	}
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	sum, err := keyedsum.Check(o.records, o.keys, o.out)
	if err != nil {
		return r, err
	}
	r.Summary = sum
	fmt.Fprintf(stdout, "\ncheck: exactly-once: %d lines in %s of %s hold every record of 1..%d once and %d keys' running sums\n",
		sum.Lines, count(sum.Files, "part file"), count(sum.Runs, "run"), o.records, sum.Keys)
	fmt.Fprintf(stdout, "\ntotal %s, %s, finished by %s\n", r.Elapsed.Round(time.Millisecond), count(r.Kills, "kill"), r.Finished)
	return r, nil
}

// start starts the process; its lines and then its exit arrive on events.
func (jm *jobManager) start(self string, args []string, t0 time.Time, events chan<- event) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	jm.cmd = exec.Command(self, args...)
	jm.cmd.Stdout, jm.cmd.Stderr = pw, pw
	dieWithParent(jm.cmd)
	if jm.stdin, err = jm.cmd.StdinPipe(); err != nil {
		return errors.Join(err, pr.Close(), pw.Close())
	}
	err = jm.cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return fmt.Errorf("starting %s: %w", jm.name, err)
	}
	go func() {
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			events <- event{jm: jm, at: time.Since(t0), line: sc.Text()}
		}
		err := jm.cmd.Wait()
		events <- event{jm: jm, at: time.Since(t0), exited: true, err: err}
	}()
	return nil
}

// ack lets the process store its next checkpoint.
func (jm *jobManager) ack() error {
	_, err := io.WriteString(jm.stdin, "\n")
	return err
}
