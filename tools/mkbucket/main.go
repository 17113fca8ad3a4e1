package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob"
)

func main() {
	del := flag.Bool("delete", false, "remove the (empty) bucket instead of creating it")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: mkbucket [-delete] 's3://bucket?endpoint=…&use_path_style=true&region=…'")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, flag.Arg(0), *del); err != nil {
		fmt.Fprintln(os.Stderr, "mkbucket:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bucketURL string, del bool) error {
	u, err := url.Parse(bucketURL)
	if err != nil {
		return err
	}
	if u.Scheme != "s3" || u.Host == "" {
		return fmt.Errorf("%q is not an s3://bucket URL", bucketURL)
	}
	b, err := blob.OpenBucket(ctx, bucketURL)
	if err != nil {
		return err
	}
	defer b.Close()
	var client *s3.Client
	if !b.As(&client) {
		return errors.New("the bucket is not an s3blob bucket")
	}
	name := u.Host
	if del {
		_, err = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &name})
		return err
	}
	_, err = client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name})
	var owned *types.BucketAlreadyOwnedByYou
	if errors.As(err, &owned) {
		return nil
	}
	return err
}
