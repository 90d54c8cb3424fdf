# The Kafka gateway's image: the static strata binary (linux/arm64, built by
# scripts/build-functions.sh into this directory) on distroless's static base, which
# brings the CA certificates the AWS SDK needs and a non-root user. `cdk deploy` builds
# it; `cdk synth` only stages this directory.
FROM --platform=linux/arm64 gcr.io/distroless/static-debian12:nonroot
COPY strata /strata
ENTRYPOINT ["/strata"]
