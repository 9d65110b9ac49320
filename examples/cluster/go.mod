module github.com/jobgraph/jobgraph/examples/cluster

go 1.26.0

replace (
	github.com/jobgraph/jobgraph => ../..
	github.com/jobgraph/jobgraph/transport/grpc => ../../transport/grpc
)

require (
	github.com/jobgraph/jobgraph v0.0.0-00010101000000-000000000000
	github.com/jobgraph/jobgraph/transport/grpc v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
