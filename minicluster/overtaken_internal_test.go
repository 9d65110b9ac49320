package minicluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// A call that Close overtakes (it passed the cluster's own check, then the Dispatcher or a
// JobMaster closed under it) returns the cluster's ErrClosed, as every method does once Close was
// called; before Close, and for other errors, the error is the component's, unchanged. An outside
// host's calls racing Close got "dispatcher: closed" from RequestJobStatus and ListJobs.
func TestACallOvertakenByCloseReturnsTheClustersErrClosed(t *testing.T) {
	mc := &MiniCluster{state: running}
	jmClosed := fmt.Errorf("jobmaster: runner of job x: %w", jobmaster.ErrClosed)
	assert.Same(t, dispatcher.ErrClosed, mc.overtaken(dispatcher.ErrClosed), "running: the Dispatcher's own")
	assert.Same(t, jmClosed, mc.overtaken(jmClosed), "running: the JobMaster's own")
	assert.NoError(t, mc.overtaken(nil))

	mc.state = closed
	assert.Same(t, ErrClosed, mc.overtaken(dispatcher.ErrClosed))
	assert.Same(t, ErrClosed, mc.overtaken(fmt.Errorf("dispatcher: closed: job x: %w", dispatcher.ErrClosed)))
	assert.Same(t, ErrClosed, mc.overtaken(jmClosed))
	assert.Same(t, dispatcher.ErrJobNotFound, mc.overtaken(dispatcher.ErrJobNotFound), "not a closed error")
	other := errors.New("savepoint declined")
	assert.Same(t, other, mc.overtaken(other))
	assert.NoError(t, mc.overtaken(nil))
}
