// Command mkbucket creates the S3 bucket that a gocloud s3:// URL names,
// using the URL's own settings (endpoint, region, path style) and the usual
// AWS credentials from the environment. A bucket that exists already and is
// the caller's is not an error. .ci/minio.sh runs it against a throwaway
// MinIO server:
//
//	go run ./tools/mkbucket 's3://parley-test?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1'
//
// With -delete it removes the bucket (which must be empty) instead.
package main
