#!/usr/bin/env bash
# Regenerates the committed protobuf and gRPC code of module transport/grpc from its .proto
# files, with pinned generators. The tests need none of this; only a change to a .proto does.
#   protoc:             3.21.12, Debian 12's protobuf-compiler (installed with apt-get when
#                       missing; another version is refused, since its name goes into the
#                       generated files' headers)
#   protoc-gen-go:      google.golang.org/protobuf v1.36.12
#   protoc-gen-go-grpc: google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.5.1
set -euo pipefail
cd "$(dirname "$0")"
protoc_version=3.21.12
if ! command -v protoc >/dev/null; then
	apt-get update -qq && apt-get install -y -qq protobuf-compiler
fi
if [ "$(protoc --version)" != "libprotoc $protoc_version" ]; then
	echo "gen.sh: protoc $protoc_version is pinned, $(command -v protoc) is $(protoc --version)" >&2
	exit 1
fi
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
GOBIN="$bin" go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
GOBIN="$bin" go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
export PATH="$bin:$PATH"
for proto in $(find . -name '*.proto' | sort); do
	protoc --proto_path="$(dirname "$proto")" \
		--go_out="$(dirname "$proto")" --go_opt=paths=source_relative \
		--go-grpc_out="$(dirname "$proto")" --go-grpc_opt=paths=source_relative \
		"$proto"
done
