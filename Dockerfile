# The voda image: a static binary on a distroless base, run as non-root.
#   docker build -t ghcr.io/vodascheduler/voda:0.1.0 .   # with a container engine;
#   make image builds the same image without one (docs/install.md).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY internal internal
COPY pkg pkg
ARG VERSION=0.1.0
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/vodascheduler/voda/internal/cli.Version=${VERSION}" -o /out/voda ./cmd/voda

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/voda /usr/local/bin/voda
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/voda"]
CMD ["controller"]
