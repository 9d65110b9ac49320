package wc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/source"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// The job's name, its vertices' names and the names of their task code in a taskexecutor.Registry.
const (
	JobName = "wordcount"

	SourceVertex = "source"
	CountVertex  = "count"
	SinkVertex   = "sink"

	SourceInvokable = "wordcount-source"
	CountInvokable  = "wordcount-count"
	SinkInvokable   = "wordcount-sink"

	// SourceCoordinator is the name of the source vertex's operator coordinator in a
	// coordination.Registry (RegisterCoordinator): it hands out the files as splits.
	SourceCoordinator = "wordcount-files"
)

// The names of the job's accumulators (jobgraph.JobResult.Accumulators): the totals the tasks
// report, summed over the subtasks whose attempts count (a failed attempt's are discarded when it
// is restarted).
const (
	// AccFiles (IntCounter): the files the sources read.
	AccFiles = "files"
	// AccBytes (LongCounter): the bytes the sources read.
	AccBytes = "bytes"
	// AccWords (LongCounter): the words the sources read, every occurrence counted.
	AccWords = "words"
	// AccFilesPerSource (Histogram): source subtask index → the files that subtask read.
	AccFilesPerSource = "files-per-source"
	// AccDistinctWords (IntCounter): the distinct words the sink received.
	AccDistinctWords = "distinct-words"
	// AccTopWords (ListAccumulator[WordCount]): the sink's SinkConfig.Top most frequent words,
	// by count descending, then word (TopN's order); absent when Top is 0.
	AccTopWords = "top-words"
)

// SourceConfig is the source vertex's Config, "{}" or e.g. {"failOnce":true}. The files are not
// in it: they are the splits of the vertex's operator coordinator (see FileSplits).
type SourceConfig struct {
	// FailOnce makes subtask 0 fail its first attempt after it emitted all its output.
	FailOnce bool `json:"failOnce,omitempty"`
	// SlowSubtask's reader waits SlowDelay (nanoseconds in the JSON) before each file it reads,
	// when SlowDelay is above 0: a slow reader, which gets fewer files.
	SlowSubtask int           `json:"slowSubtask,omitempty"`
	SlowDelay   time.Duration `json:"slowDelay,omitempty"`
}

// CountConfig is the count vertex's Config, "{}" or {"failOnce":true}.
type CountConfig struct {
	// FailOnce makes subtask 0 fail its first attempt after it emitted all its output.
	FailOnce bool `json:"failOnce,omitempty"`
}

// SinkConfig is the sink vertex's Config, as JSON, e.g. {"outPath":"/tmp/wc.tsv"}; {} when empty.
type SinkConfig struct {
	// OutPath, when set, is the file the sink writes the result to (WriteCounts format), replacing
	// it atomically (a temporary file in the same directory, renamed when complete).
	OutPath string `json:"outPath,omitempty"`
	// SkipResult: do not store the result for TakeResult (when the host reads only OutPath).
	SkipResult bool `json:"skipResult,omitempty"`
	// FailOnce makes the sink fail its first attempt after it read and merged its input and
	// added to its accumulators, before it writes or stores anything.
	FailOnce bool `json:"failOnce,omitempty"`
	// Top is how many of the most frequent words the sink reports in accumulator AccTopWords;
	// none when 0.
	Top int `json:"top,omitempty"`
}

// ErrInjectedFailure is the failure a FailOnce config injects.
var ErrInjectedFailure = errors.New("injected failure (fail once)")

// injectFailure returns ErrInjectedFailure for the first attempt of subtask 0 when enabled.
func injectFailure(info taskexecutor.TaskInfo, enabled bool) error {
	if enabled && info.SubtaskIndex == 0 && info.AttemptNumber == 0 {
		return fmt.Errorf("wc: %s attempt %d: %w", info.TaskName, info.AttemptNumber, ErrInjectedFailure)
	}
	return nil
}

// JobOptions configure BuildJobWith.
type JobOptions struct {
	// Parallelism of the source and the count vertex, at least 1. The sink has parallelism 1.
	Parallelism int
	// OutPath and SkipResult go into the SinkConfig.
	OutPath    string
	SkipResult bool
	// FailOnce names a vertex (SourceVertex, CountVertex or SinkVertex) whose subtask 0 fails its
	// first attempt; empty for none. The job then needs a restart strategy to finish.
	FailOnce string
	// Top goes into the SinkConfig: how many of the most frequent words the sink reports in
	// accumulator AccTopWords (at least 0).
	Top int
	// SlowSubtask and SlowDelay go into the SourceConfig: that source subtask waits SlowDelay
	// before each file (none when SlowDelay is 0).
	SlowSubtask int
	SlowDelay   time.Duration
	// SplitBytes is the size of the source's splits (FileSplits); 0 means DefaultSplitBytes.
	SplitBytes int64
}

// BuildJob returns the BATCH word-count job over files with the given source and count
// parallelism; its sink stores the result for TakeResult and writes no file.
func BuildJob(files []InputFile, parallelism int) (*jobgraph.JobGraph, error) {
	return BuildJobWith(files, JobOptions{Parallelism: parallelism})
}

// BuildJobWith returns the BATCH word-count job over files: source (parallelism p, reading the
// files as the splits its operator coordinator SourceCoordinator hands out, runs of consecutive
// files of about JobOptions.SplitBytes, see FileSplits) → hash shuffle by word, ALL_TO_ALL BLOCKING → count (p) → ALL_TO_ALL BLOCKING →
// sink (1). The graph is validated. Running it needs the coordinator registered
// (RegisterCoordinator).
func BuildJobWith(files []InputFile, opts JobOptions) (*jobgraph.JobGraph, error) {
	p := opts.Parallelism
	if p < 1 {
		return nil, fmt.Errorf("wc: parallelism %d is below 1", p)
	}
	if opts.Top < 0 {
		return nil, fmt.Errorf("wc: top %d is below 0", opts.Top)
	}
	switch opts.FailOnce {
	case "", SourceVertex, CountVertex, SinkVertex:
	default:
		return nil, fmt.Errorf("wc: cannot fail vertex %q once: the vertices are %s, %s and %s", opts.FailOnce, SourceVertex, CountVertex, SinkVertex)
	}
	if opts.SlowDelay < 0 || opts.SlowSubtask < 0 || opts.SlowSubtask >= p {
		return nil, fmt.Errorf("wc: slow source subtask %d with delay %s: the subtask must be in [0, %d) and the delay at least 0", opts.SlowSubtask, opts.SlowDelay, p)
	}
	srcCfg, err := json.Marshal(SourceConfig{FailOnce: opts.FailOnce == SourceVertex, SlowSubtask: opts.SlowSubtask, SlowDelay: opts.SlowDelay})
	if err != nil {
		return nil, fmt.Errorf("wc: encoding the source config: %w", err)
	}
	splitBytes := opts.SplitBytes
	if splitBytes == 0 {
		splitBytes = DefaultSplitBytes
	}
	splits, err := FileSplits(files, splitBytes)
	if err != nil {
		return nil, err
	}
	cntCfg, err := json.Marshal(CountConfig{FailOnce: opts.FailOnce == CountVertex})
	if err != nil {
		return nil, fmt.Errorf("wc: encoding the count config: %w", err)
	}
	sinkCfg, err := json.Marshal(SinkConfig{OutPath: opts.OutPath, SkipResult: opts.SkipResult, FailOnce: opts.FailOnce == SinkVertex, Top: opts.Top})
	if err != nil {
		return nil, fmt.Errorf("wc: encoding the sink config: %w", err)
	}

	g := jobgraph.New(JobName, jobgraph.Batch)
	src := g.AddVertex(SourceVertex, SourceInvokable, p).WithConfig(srcCfg)
	src.OperatorCoordinator = SourceCoordinator
	src.OperatorCoordinatorConfig = splits
	cnt := g.AddVertex(CountVertex, CountInvokable, p).WithConfig(cntCfg)
	sink := g.AddVertex(SinkVertex, SinkInvokable, 1).WithConfig(sinkCfg)
	g.Connect(src, cnt, jobgraph.AllToAll, jobgraph.Blocking).ShipStrategy = "HASH"
	g.Connect(cnt, sink, jobgraph.AllToAll, jobgraph.Blocking).ShipStrategy = "GLOBAL"
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("wc: %w", err)
	}
	return g, nil
}

// DefaultSplitBytes is the source's split size unless JobOptions.SplitBytes says otherwise:
// 1 MiB, some 90 splits of $GOROOT/src, so handing them out costs nothing next to reading them,
// and a reader's files mostly come from few directories (whose words its local combiner
// merges).
const DefaultSplitBytes = 1 << 20

// FileSplits returns the source's OperatorCoordinatorConfig: the files, in the order given, cut
// into splits of consecutive files, each taking files until they add up to at least splitBytes
// bytes (the last may be smaller): every file is in exactly one split, a file of splitBytes or
// more is a split of its own, and splitBytes 1 makes one split per file (but an empty file,
// which joins the next). The config is the files' paths separated by a NUL byte, and the splits
// by two: a path holds no NUL and is never empty, so the JobMaster finds the splits by cutting at
// NULs (decodeFileSplits). A split's ID is its first file's path, its payload its files' paths
// separated by NULs. (StaticSplitsConfig JSON, with each payload JSON of the files in base64,
// took the JobMaster some 5 ms to decode at GOROOT/src's 7,711 files, and encoding it 2–5 ms.)
// Errors: splitBytes below 1; an empty path or one holding a NUL byte; two splits starting
// with one path (naming it).
func FileSplits(files []InputFile, splitBytes int64) ([]byte, error) {
	if splitBytes < 1 {
		return nil, fmt.Errorf("wc: split size %d is below 1 byte", splitBytes)
	}
	size := 0
	for _, f := range files {
		switch {
		case f.Path == "":
			return nil, errors.New("wc: a file path is empty")
		case strings.IndexByte(f.Path, 0) >= 0:
			return nil, fmt.Errorf("wc: file path %q holds a NUL byte", f.Path)
		}
		size += len(f.Path) + 2
	}
	cfg := make([]byte, 0, size)
	ids := map[string]bool{}
	for len(files) > 0 {
		if ids[files[0].Path] {
			return nil, fmt.Errorf("wc: the source's splits: split ID %q appears twice", files[0].Path)
		}
		ids[files[0].Path] = true
		if len(cfg) > 0 {
			cfg = append(cfg, 0, 0)
		}
		n, size := 0, int64(0)
		for n < len(files) && size < splitBytes {
			if n > 0 {
				cfg = append(cfg, 0)
			}
			cfg = append(cfg, files[n].Path...)
			size += max(files[n].Size, 0)
			n++
		}
		files = files[n:]
	}
	return cfg, nil
}

// decodeFileSplits returns the splits of a FileSplits config, in order; an empty config has
// none. The payloads alias cfg.
func decodeFileSplits(cfg []byte) ([]source.Split, error) {
	var splits []source.Split
	for len(cfg) > 0 {
		payload := cfg
		if k := bytes.Index(cfg, []byte{0, 0}); k >= 0 {
			payload, cfg = cfg[:k:k], cfg[k+2:]
		} else {
			cfg = nil
		}
		id := payload
		if k := bytes.IndexByte(payload, 0); k >= 0 {
			id = payload[:k]
		}
		if len(id) == 0 {
			return nil, errors.New("wc: the source's coordinator config has an empty path")
		}
		splits = append(splits, source.Split{ID: string(id), Payload: payload})
	}
	return splits, nil
}

// RegisterCoordinator adds the source's operator coordinator to reg under SourceCoordinator:
// a source.SplitListProvider of the splits FileSplits put in the vertex's
// OperatorCoordinatorConfig, which hands them out one per request, so a faster reader reads more
// files. It returns Registry.Register's error when the name is taken.
func RegisterCoordinator(reg *coordination.Registry) error {
	return reg.Register(SourceCoordinator, source.SplitListProvider(func(ctx coordination.Context) ([]source.Split, error) {
		return decodeFileSplits(ctx.Config())
	}))
}

// Register adds the job's task code to reg under SourceInvokable, CountInvokable and
// SinkInvokable. Like Registry.Register, it panics when one of the names is taken.
func Register(reg *taskexecutor.Registry) {
	reg.Register(SourceInvokable, RunSource)
	reg.Register(CountInvokable, RunCount)
	reg.Register(SinkInvokable, RunSink)
}

// Partition returns the subpartition, of n, that word goes to: the 32-bit FNV-1a hash of its bytes
// modulo n. n must be at least 1.
func Partition(word string, n int) int {
	if n == 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(word); i++ {
		h ^= uint32(word[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// RunSource is the source task (source → tokenize → local combiner, chained): it reads the files
// of the splits its operator coordinator hands it (source.ReadSplits), counts their words,
// and once there are no more files emits one WordCount per distinct word to output 0,
// subpartition Partition(word, n), in increasing word order, packed into Chunks of at most
// ChunkSize words. It adds the files, bytes and words it read to accumulators AccFiles, AccBytes
// and AccWords, and its subtask index once per file to AccFilesPerSource.
func RunSource(ctx context.Context, env taskexecutor.Environment) error {
	info := env.Info()
	var cfg SourceConfig
	if err := decodeConfig(info, &cfg); err != nil {
		return err
	}
	if info.Parallelism < 1 || info.SubtaskIndex < 0 || info.SubtaskIndex >= info.Parallelism {
		return fmt.Errorf("wc: %s: subtask %d of parallelism %d", info.TaskName, info.SubtaskIndex, info.Parallelism)
	}
	if env.NumOutputs() < 1 {
		return fmt.Errorf("wc: %s: the source has no output", info.TaskName)
	}
	out := env.Output(0)
	accs := env.AccumulatorRegistry()
	files, err := accs.IntCounter(AccFiles)
	if err != nil {
		return fmt.Errorf("wc: %s: %w", info.TaskName, err)
	}
	bytes, err := accs.LongCounter(AccBytes)
	if err != nil {
		return fmt.Errorf("wc: %s: %w", info.TaskName, err)
	}
	words, err := accs.LongCounter(AccWords)
	if err != nil {
		return fmt.Errorf("wc: %s: %w", info.TaskName, err)
	}
	perSource, err := accs.Histogram(AccFilesPerSource)
	if err != nil {
		return fmt.Errorf("wc: %s: %w", info.TaskName, err)
	}
	slow := cfg.SlowDelay > 0 && info.SubtaskIndex == cfg.SlowSubtask
	var c Counter
	var buf []byte
	err = source.ReadSplits(ctx, env, func(ctx context.Context, sp *source.Split) error {
		for path := range strings.SplitSeq(string(sp.Payload), "\x00") {
			if slow {
				t := time.NewTimer(cfg.SlowDelay)
				select {
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-t.C:
				}
			}
			var err error
			if buf, err = readFile(path, buf); err != nil {
				return err
			}
			c.AddText(buf)
			files.Add(1)
			bytes.Add(int64(len(buf)))
			perSource.Add(info.SubtaskIndex)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("wc: %w", err)
	}
	words.Add(int64(c.Total()))
	if err := emitAll(ctx, out, info.SubtaskIndex, &c); err != nil {
		return err
	}
	return injectFailure(info, cfg.FailOnce)
}

// RunCount is the count task: it merges the sorted runs of its producers, summing the counts of
// each word, and emits one WordCount per distinct word to output 0, subpartition
// Partition(word, n), in increasing word order, packed into Chunks of at most ChunkSize words.
func RunCount(ctx context.Context, env taskexecutor.Environment) error {
	info := env.Info()
	var cfg CountConfig
	if err := decodeConfig(info, &cfg); err != nil {
		return err
	}
	if env.NumOutputs() < 1 {
		return fmt.Errorf("wc: %s: the count has no output", info.TaskName)
	}
	runs, err := readRuns(ctx, env)
	if err != nil {
		return err
	}
	merged, err := mergeRuns(runs, true)
	if err != nil {
		return fmt.Errorf("wc: %s: %w", info.TaskName, err)
	}
	out := env.Output(0)
	n := out.NumSubpartitions()
	if n == 1 {
		if err := emitChunks(ctx, out, 0, info.SubtaskIndex, merged); err != nil {
			return err
		}
		return injectFailure(info, cfg.FailOnce)
	}
	all, offsets := groupBySubpartition(merged, n)
	for s := range n {
		if err := emitChunks(ctx, out, s, info.SubtaskIndex, all[offsets[s]:offsets[s+1]]); err != nil {
			return err
		}
	}
	return injectFailure(info, cfg.FailOnce)
}

// RunSink is the sink task (parallelism 1): it merges the sorted runs of its producers into every
// WordCount sorted by word, fails if a word arrives twice, reports the number of distinct words
// in accumulator AccDistinctWords and the SinkConfig.Top most frequent ones in AccTopWords,
// writes them to SinkConfig.OutPath when set, and stores them for TakeResult(jobID) unless
// SinkConfig.SkipResult. When it neither writes nor stores them, it walks the runs side by side
// without building the merged slice (distinctWords), and reports the same totals.
func RunSink(ctx context.Context, env taskexecutor.Environment) error {
	info := env.Info()
	var cfg SinkConfig
	if err := decodeConfig(info, &cfg); err != nil {
		return err
	}
	if info.Parallelism != 1 {
		return fmt.Errorf("wc: %s: the sink needs parallelism 1, has %d", info.TaskName, info.Parallelism)
	}
	runs, err := readRuns(ctx, env)
	if err != nil {
		return err
	}
	if cfg.OutPath == "" && cfg.SkipResult {
		// Nothing needs the words in one sorted slice: the totals come from the runs as they
		// are, walked side by side as the merge would, which finds a word in two of them.
		distinct, err := distinctWords(runs)
		if err != nil {
			return fmt.Errorf("wc: %s: %w: every word must reach exactly one count subtask", info.TaskName, err)
		}
		if err := reportSink(env, cfg, distinct, func(yield func(WordCount) bool) {
			for _, r := range runs {
				for _, ws := range r {
					for _, wc := range ws {
						if !yield(wc) {
							return
						}
					}
				}
			}
		}); err != nil {
			return fmt.Errorf("wc: %s: %w", info.TaskName, err)
		}
		return injectFailure(info, cfg.FailOnce)
	}
	result, err := mergeRuns(runs, false)
	if err != nil {
		return fmt.Errorf("wc: %s: %w: every word must reach exactly one count subtask", info.TaskName, err)
	}
	if err := reportSink(env, cfg, len(result), slices.Values(result)); err != nil {
		return fmt.Errorf("wc: %s: %w", info.TaskName, err)
	}
	if err := injectFailure(info, cfg.FailOnce); err != nil {
		return err
	}
	if cfg.OutPath != "" {
		if err := writeFileAtomic(cfg.OutPath, result); err != nil {
			return fmt.Errorf("wc: %s: %w", info.TaskName, err)
		}
	}
	if !cfg.SkipResult {
		storeResult(info.JobID, result)
	}
	return nil
}

// reportSink adds the sink's totals to its accumulators: distinct words, and the top ones of
// words (each word once).
func reportSink(env taskexecutor.Environment, cfg SinkConfig, distinctWords int, words iter.Seq[WordCount]) error {
	accs := env.AccumulatorRegistry()
	distinct, err := accs.IntCounter(AccDistinctWords)
	if err != nil {
		return err
	}
	distinct.Add(distinctWords)
	if cfg.Top <= 0 {
		return nil
	}
	top := new(jobgraph.ListAccumulator[WordCount])
	if err := accs.Add(AccTopWords, top); err != nil {
		return err
	}
	for _, wc := range topN(words, cfg.Top) {
		top.Add(wc)
	}
	return nil
}

func decodeConfig(info taskexecutor.TaskInfo, cfg any) error {
	if len(info.Config) == 0 {
		return nil
	}
	if err := json.Unmarshal(info.Config, cfg); err != nil {
		return fmt.Errorf("wc: %s: decoding the vertex config: %w", info.TaskName, err)
	}
	return nil
}

// readInput calls fn with every Chunk of input i until it ends (io.EOF).
func readInput(ctx context.Context, env taskexecutor.Environment, i int, fn func(Chunk) error) error {
	info := env.Info()
	gate := env.Input(i)
	for {
		rec, err := gate.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("wc: %s: reading input %d: %w", info.TaskName, i, err)
		}
		var ch Chunk
		switch r := rec.(type) {
		case Chunk:
			ch = r
		case *Chunk:
			if r == nil {
				return fmt.Errorf("wc: %s: input %d: nil *Chunk record", info.TaskName, i)
			}
			ch = *r
		default:
			return fmt.Errorf("wc: %s: input %d: record of type %T, want wc.Chunk", info.TaskName, i, rec)
		}
		if ch.Producer < 0 {
			return fmt.Errorf("wc: %s: input %d: chunk from producer %d", info.TaskName, i, ch.Producer)
		}
		if err := fn(ch); err != nil {
			return err
		}
	}
}

// emitAll emits the words of c to out as sorted runs of Chunks from producer: each word to
// subpartition Partition(word, n), in increasing word order.
//
// A run's words are copied into one string, in the run's order, and its WordCounts slice that
// string: the count and the sink compare neighbouring words of a run, which then sit next to each
// other in memory. The Counter's words are allocated one by one in first-seen order, so in sorted
// order each comparison would read two far-apart places; on GOROOT/src (about 105,000 words per
// run) the copy made the count's and the sink's reading and merging together some 45 ms
// shorter, for some 10 ms more in each source.
func emitAll(ctx context.Context, out taskexecutor.ResultPartitionWriter, producer int, c *Counter) error {
	n := out.NumSubpartitions()
	// The sort keys of c's words, grouped by subpartition (a counting sort): subpartition s's are
	// keys[offsets[s]:offsets[s+1]].
	keys := make([]sortKey, c.Len())
	offsets := make([]int, n+1)
	if n == 1 {
		for k, w := range c.words {
			keys[k] = sortKey{key: wordKey(w, 0), i: k}
		}
		offsets[1] = len(keys)
	} else {
		parts := make([]int32, c.Len())
		for k, w := range c.words {
			s := Partition(w, n)
			parts[k] = int32(s)
			offsets[s+1]++
		}
		for s := range n {
			offsets[s+1] += offsets[s]
		}
		next := slices.Clone(offsets[:n])
		for k, s := range parts {
			keys[next[s]] = sortKey{key: wordKey(c.words[k], 0), i: k}
			next[s]++
		}
	}
	largest := 0
	for s := range n {
		largest = max(largest, offsets[s+1]-offsets[s])
	}
	tmp := make([]sortKey, largest)
	all := make([]WordCount, len(keys))
	for s := range n {
		sk := keys[offsets[s]:offsets[s+1]]
		sortWordKeys(sk, tmp, c.words)
		run := all[offsets[s]:offsets[s+1]]
		size := 0
		for _, k := range sk {
			size += len(c.words[k.i])
		}
		var arena strings.Builder
		arena.Grow(size)
		for j, k := range sk {
			w := c.words[k.i]
			arena.WriteString(w)
			run[j] = WordCount{Word: w, Count: c.counts[k.i]}
		}
		text, off := arena.String(), 0
		for j := range run {
			l := len(run[j].Word)
			run[j].Word = text[off : off+l]
			off += l
		}
		if err := emitChunks(ctx, out, s, producer, run); err != nil {
			return err
		}
	}
	return nil
}

// groupBySubpartition returns words in a new array grouped by subpartition Partition(word, n) (a
// stable counting sort): subpartition s's words are all[offsets[s]:offsets[s+1]], in their order
// in words.
func groupBySubpartition(words []WordCount, n int) (all []WordCount, offsets []int) {
	all = make([]WordCount, len(words))
	offsets = make([]int, n+1)
	parts := make([]int32, len(words))
	for k, wc := range words {
		s := Partition(wc.Word, n)
		parts[k] = int32(s)
		offsets[s+1]++
	}
	for s := range n {
		offsets[s+1] += offsets[s]
	}
	next := slices.Clone(offsets[:n])
	for k, s := range parts {
		all[next[s]] = words[k]
		next[s]++
	}
	return all, offsets
}

// emitChunks emits words to subpartition s of out as Chunks of at most ChunkSize words from
// producer. The Chunks alias words.
func emitChunks(ctx context.Context, out taskexecutor.ResultPartitionWriter, s, producer int, words []WordCount) error {
	for len(words) > 0 {
		n := min(len(words), ChunkSize)
		if err := out.Emit(ctx, s, Chunk{Producer: producer, Words: words[:n:n]}); err != nil {
			return err
		}
		words = words[n:]
	}
	return nil
}

// writeFileAtomic writes counts to a temporary file next to path and renames it to path.
func writeFileAtomic(path string, counts []WordCount) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := WriteCounts(f, counts); err != nil {
		return fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
