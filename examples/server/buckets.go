package main

import (
	"fmt"
	"slices"
	"strings"

	"gocloud.dev/blob"
)

// cloudSchemes are the bucket URL schemes whose drivers come with the
// build tag cloud (cloud.go), and the store each names.
var cloudSchemes = map[string]string{
	"s3":     "Amazon S3 and S3-compatible stores",
	"gs":     "Google Cloud Storage",
	"azblob": "Azure Blob Storage",
}

// checkBucket refuses, before anything is created, a bucket URL (of the
// flag named flag) whose scheme no linked driver opens: a cloud scheme in
// a build without the tag cloud says how to build with it; another names
// the schemes this build opens.
func checkBucket(flag, bucketURL string) error {
	if bucketURL == "" {
		return nil
	}
	scheme, _, ok := strings.Cut(bucketURL, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/\\@?") {
		return fmt.Errorf("%s %s: not a bucket URL: use file:///absolute/path or another gocloud.dev bucket URL such as s3://bucket?region=…", flag, redact(bucketURL))
	}
	scheme = strings.ToLower(scheme)
	if blob.DefaultURLMux().ValidBucketScheme(scheme) {
		return nil
	}
	if store, ok := cloudSchemes[scheme]; ok {
		return fmt.Errorf("%s %s: this server was built without the %s:// driver (%s): "+
			"the cloud bucket drivers come with the build tag cloud: go run -tags cloud ./examples/server …, or go build -tags cloud ./examples/server",
			flag, redact(bucketURL), scheme, store)
	}
	schemes := blob.DefaultURLMux().BucketSchemes()
	for s := range cloudSchemes {
		if !slices.Contains(schemes, s) {
			schemes = append(schemes, s+" (with -tags cloud)")
		}
	}
	slices.Sort(schemes)
	return fmt.Errorf("%s %s: unknown bucket scheme %q: this server opens %s", flag, redact(bucketURL), scheme, strings.Join(schemes, ", "))
}
