module github.com/jobgraph/jobgraph

go 1.26.0

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
