# kubesd's container image: built in a Rust image, shipped on distroless (glibc, CA
# certificates, no shell), running as the non-root user 65532.
#
#   docker build --build-arg KUBESD_GIT_COMMIT="$(git rev-parse --short=12 HEAD)" -t kubesd .
#
# Listens on 9097 (HTTP SD at /sd/<job>, /metrics, /healthz, /ready); `.dockerignore`
# keeps `.git` and `target/` out of the context, hence the commit as a build argument.

FROM docker.io/library/rust:1.88-bookworm AS build
WORKDIR /src
# Dependencies first, in a layer of their own that changes only with Cargo.lock: a
# skeleton crate with the real manifest is built once, then replaced by the sources.
COPY Cargo.toml Cargo.lock ./
COPY core/Cargo.toml core/build.rs ./core/
COPY actors/Cargo.toml ./actors/
COPY simulator/Cargo.toml ./simulator/
RUN mkdir -p src core/src simulator/src benches examples \
    && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs core/src/lib.rs actors/lib.rs simulator/src/lib.rs \
    && for b in model flood engine soak; do echo 'fn main() {}' > "benches/$b.rs"; done \
    && cargo build --release --locked --bin kubesd \
    && rm -rf src core/src simulator/src actors/lib.rs benches examples
COPY core/src ./core/src
COPY actors ./actors
COPY simulator/src ./simulator/src
COPY src ./src
COPY benches ./benches
COPY examples ./examples
ARG KUBESD_GIT_COMMIT=unknown
ENV KUBESD_GIT_COMMIT=${KUBESD_GIT_COMMIT}
# `touch`: the sources' times may be older than the skeleton's build.
RUN touch src/main.rs src/lib.rs core/src/lib.rs actors/lib.rs simulator/src/lib.rs \
    && cargo build --release --locked --bin kubesd \
    && cp target/release/kubesd /kubesd \
    && /kubesd --version

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /kubesd /usr/local/bin/kubesd
USER 65532:65532
EXPOSE 9097
ENTRYPOINT ["/usr/local/bin/kubesd"]
CMD ["run", "--config", "/etc/kubesd/kubesd.yml", "--listen", "0.0.0.0:9097"]
