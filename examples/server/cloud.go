//go:build cloud

package main

// The cloud bucket drivers, linked only with the build tag cloud:
//
//	go run -tags cloud ./examples/server -bucket 's3://my-bucket?region=eu-west-1'
//
// Their SDKs (AWS, Google Cloud with gRPC, Azure) are most of what a first
// build of this server would compile: without them the quick start, on
// SQLite and a folder, builds in about the time a program using only those
// takes (BENCHMARKS.md, "The first build"). Without the tag a -bucket of
// these schemes fails at start and names the tag (see checkBucket).
import (
	_ "github.com/parleychat/parley/storage/blobstore/azure" // azblob:// buckets
	_ "github.com/parleychat/parley/storage/blobstore/gcs"   // gs:// buckets
	_ "github.com/parleychat/parley/storage/blobstore/s3"    // s3:// buckets
)
