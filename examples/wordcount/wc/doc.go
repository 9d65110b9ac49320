// Package wc is the job logic of the word-count example: a BATCH job that counts the words of every
// .go file below a directory (by default the Go standard library's source tree, $GOROOT/src), and
// the plain sequential loop it is checked against.
//
// A word is a maximal run of runes r for which unicode.IsLetter(r), unicode.IsDigit(r) or r == '_'
// holds, case-sensitive. Bytes are decoded as utf8.DecodeRune does: an invalid byte decodes to
// utf8.RuneError, which is no letter, so it separates words. The input is every regular file whose
// name ends in ".go" below the input directory, recursively, in sorted path order; symbolic links
// and other non-regular files below it are skipped.
//
// The job (BuildJob) has three vertices:
//
//	source ──ALL_TO_ALL, BLOCKING, hash(word)──▶ count ──ALL_TO_ALL, BLOCKING──▶ sink
//	  p                                            p                            1
//
// The vertices:
//
//   - "source" (task code "wordcount-source", operator coordinator "wordcount-files"): a FLIP-27
//     split-enumerator source (package source). The vertex's coordinator, on the JobMaster,
//     holds the input files as splits (FileSplits: runs of consecutive files in path order of
//     about 1 MiB, DefaultSplitBytes) and hands the next one to whichever reader asks; each
//     subtask reads a split's files, asks for the next, and so on until the coordinator has none
//     left, so a faster reader reads more files and a slow one fewer (accumulator
//     AccFilesPerSource says how many each read). It tokenizes them and
//     combines the counts locally, then emits one WordCount per distinct word to subpartition
//     Partition(word, n) (FNV-1a), each subpartition's words sorted by word. When a subtask fails
//     and is restarted, the splits it had been given are read again: the coordinator takes them
//     back (OperatorCoordinator.SubtaskReset) and hands them out again. Source, tokenize and
//     the local combiner are chained into one task as Flink would chain them (its operator
//     chaining): handing whole files over a POINTWISE edge to a separate tokenize vertex would
//     copy the input through the shuffle once more and buy nothing, since no exchange of keys
//     happens in between.
//   - "count" (task code "wordcount-count"): sums the partial counts of the words of its hash
//     partition; every word reaches exactly one count subtask. It emits them sorted by word.
//   - "sink" (task code "wordcount-sink", parallelism 1): collects every (word, count), sorted by
//     word, fails on a word that arrives twice (the shuffle would be broken), and hands the result
//     to the host: written to SinkConfig.OutPath if set (one "word\tcount\n" line per word, sorted
//     by word in byte order, see WriteCounts) and stored for TakeResult under the job's JobID
//     (unless SinkConfig.SkipResult: a host in another process reads the accumulators instead).
//     When it neither writes nor stores the result, it does not build the merged slice: it walks
//     the count subtasks' runs side by side as the merge would, failing on a word in two of them,
//     and reports the totals from the runs as they are.
//
// The tasks report the job's totals in accumulators, which the JobResult carries
// (jobgraph.JobResult.Accumulators, read with jobgraph.AccumulatorValue): the sources the files,
// bytes and words they read (AccFiles, AccBytes, AccWords) and the files per source subtask
// (AccFilesPerSource), the sink the number of distinct words (AccDistinctWords) and its
// SinkConfig.Top most frequent words (AccTopWords). They are merged
// over the attempts that count, so a subtask that failed and was restarted is counted once.
//
// The tasks exchange Chunk records: up to ChunkSize words with their counts, tagged with the
// producer's subtask index — one record per few thousand words rather than one per word. What one
// producer subtask sends one consumer subtask, its Chunks in order (the shuffle keeps that order),
// is a sorted run: strictly increasing by word. So the sorting is done in parallel, by the source
// subtasks, and the count and the sink merge the runs of their producers (sort-based aggregation,
// as Flink runs batch aggregations), each checking that its runs are sorted: the count sums the
// counts of equal words, the sink fails on them. No task hashes or sorts everything again, and the
// single sink at most merges.
//
// Register puts the three task codes into a taskexecutor.Registry, RegisterCoordinator the
// source's coordinator into a coordination.Registry (the MiniCluster's OperatorCoordinators).
// The vertices carry no slot sharing group: in BATCH mode Flink does not put all vertices into
// one group by default either.
//
// Every vertex Config is JSON of SourceConfig, CountConfig or SinkConfig. Unknown fields are
// ignored, so later options (failure injection, …) can be added without breaking older configs.
package wc
