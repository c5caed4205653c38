//! The P4Runtime gRPC service and how it is started.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::arbitration::{StreamId, code};
use crate::device::Device;
use crate::proto::p4::v1::p4_runtime_server::{P4Runtime, P4RuntimeServer};
use crate::proto::p4::v1::{
    CapabilitiesRequest, CapabilitiesResponse, GetForwardingPipelineConfigRequest,
    GetForwardingPipelineConfigResponse, PacketOut, PacketOutError, ReadRequest, ReadResponse,
    SetForwardingPipelineConfigRequest, SetForwardingPipelineConfigResponse, StreamError,
    StreamMessageRequest, StreamMessageResponse, WriteRequest, WriteResponse, stream_error,
    stream_message_request, stream_message_response,
};
use crate::status;
use crate::stream::STREAM_QUEUE;

/// The P4Runtime version p4jet implements.
pub const P4RUNTIME_VERSION: &str = "1.5.0";

/// Largest request accepted (a P4Info with a big program's JSON; PI's limit too).
pub const MAX_REQUEST_BYTES: usize = 256 * 1024 * 1024;

/// The P4Runtime service of one device.
#[derive(Clone)]
pub struct Service {
    dev: Arc<Device>,
}

impl Service {
    /// The service of `dev`.
    pub fn new(dev: Arc<Device>) -> Service {
        Service { dev }
    }

    /// The tonic service, with p4jet's message size limits.
    pub fn into_server(self) -> P4RuntimeServer<Service> {
        P4RuntimeServer::new(self)
            .max_decoding_message_size(MAX_REQUEST_BYTES)
            .max_encoding_message_size(usize::MAX)
    }
}

fn stream_error(code: i32, message: String, packet: Option<PacketOut>) -> StreamMessageResponse {
    StreamMessageResponse {
        update: Some(stream_message_response::Update::Error(StreamError {
            canonical_code: code,
            message,
            space: status::ERROR_SPACE.into(),
            code: 0,
            details: Some(stream_error::Details::PacketOut(PacketOutError {
                packet_out: packet,
            })),
        })),
    }
}

impl Service {
    /// One message of a stream; Err ends the stream with that status.
    fn on_stream_message(&self, id: StreamId, m: StreamMessageRequest) -> Result<(), Status> {
        let sessions = &self.dev.sessions;
        match m.update {
            Some(stream_message_request::Update::Arbitration(a)) => {
                sessions.arbitrate(id, &a).map_err(status::refusal)
            }
            Some(stream_message_request::Update::Packet(p)) => {
                let refuse = |code: i32, msg: String, p: PacketOut| {
                    // the packet itself is left out of the error: a flood of
                    // refusals must not echo megabytes back
                    let _ = p;
                    sessions.send_to(id, stream_error(code, msg, None));
                };
                if !sessions.has_arbitrated(id) {
                    refuse(
                        code::FAILED_PRECONDITION,
                        "PacketOut before arbitration: send a MasterArbitrationUpdate first".into(),
                        p,
                    );
                } else if !sessions.is_primary(id) {
                    refuse(
                        code::PERMISSION_DENIED,
                        "PacketOut from a backup client: only the primary sends packets".into(),
                        p,
                    );
                } else if let Err((c, msg)) = self.dev.packet_out(&p) {
                    refuse(c, msg, p);
                }
                Ok(())
            }
            Some(stream_message_request::Update::DigestAck(a)) => {
                if sessions.is_primary(id) {
                    self.dev.digest_ack(&a);
                }
                Ok(())
            }
            Some(stream_message_request::Update::Other(_)) | None => {
                sessions.send_to(
                    id,
                    StreamMessageResponse {
                        update: Some(stream_message_response::Update::Error(StreamError {
                            canonical_code: code::UNIMPLEMENTED,
                            message: "unsupported stream message".into(),
                            space: status::ERROR_SPACE.into(),
                            code: 0,
                            details: Some(stream_error::Details::Other(
                                crate::proto::p4::v1::StreamOtherError { other: None },
                            )),
                        })),
                    },
                );
                Ok(())
            }
        }
    }
}

#[tonic::async_trait]
impl P4Runtime for Service {
    async fn write(
        &self,
        request: Request<WriteRequest>,
    ) -> Result<Response<WriteResponse>, Status> {
        let req = request.into_inner();
        let dev = self.dev.clone();
        tokio::task::spawn_blocking(move || dev.write(req))
            .await
            .map_err(|e| Status::internal(format!("write task: {e}")))??;
        Ok(Response::new(WriteResponse {}))
    }

    type ReadStream = ReceiverStream<Result<ReadResponse, Status>>;

    async fn read(
        &self,
        request: Request<ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        let req = request.into_inner();
        self.dev.check_read(&req)?;
        // a few responses in flight: a slow client slows the read, it does not
        // make the server hold the whole answer
        let (tx, rx) = mpsc::channel(4);
        let dev = self.dev.clone();
        tokio::task::spawn_blocking(move || dev.read(req, &tx));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        request: Request<SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<SetForwardingPipelineConfigResponse>, Status> {
        let req = request.into_inner();
        let dev = self.dev.clone();
        tokio::task::spawn_blocking(move || dev.set_pipeline(req))
            .await
            .map_err(|e| Status::internal(format!("pipeline task: {e}")))??;
        Ok(Response::new(SetForwardingPipelineConfigResponse {}))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        request: Request<GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<GetForwardingPipelineConfigResponse>, Status> {
        let req = request.into_inner();
        Ok(Response::new(self.dev.get_pipeline(&req)?))
    }

    type StreamChannelStream = ReceiverStream<Result<StreamMessageResponse, Status>>;

    async fn stream_channel(
        &self,
        request: Request<Streaming<StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let id = self.dev.sessions.open(tx.clone());
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                match inbound.next().await {
                    Some(Ok(m)) => {
                        if let Err(st) = this.on_stream_message(id, m) {
                            let _ = tx.send(Err(st)).await;
                            break;
                        }
                    }
                    // a malformed message or a broken connection ends the stream
                    Some(Err(st)) => {
                        let _ = tx.send(Err(st)).await;
                        break;
                    }
                    None => break,
                }
            }
            this.dev.sessions.close(id);
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn capabilities(
        &self,
        _request: Request<CapabilitiesRequest>,
    ) -> Result<Response<CapabilitiesResponse>, Status> {
        Ok(Response::new(CapabilitiesResponse {
            p4runtime_api_version: P4RUNTIME_VERSION.into(),
            experimental: None,
        }))
    }
}

/// TLS settings (simple_switch_grpc's `--grpc-server-ssl` and friends).
#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    /// PEM certificate chain of the server.
    pub cert: std::path::PathBuf,
    /// PEM private key of the server.
    pub key: std::path::PathBuf,
    /// PEM CA certificates that client certificates must chain to.
    pub ca: Option<std::path::PathBuf>,
    /// Require a client certificate.
    pub client_auth: bool,
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// TLS, or plain text.
    pub tls: Option<TlsFiles>,
}

/// A running server: its address, and a handle to stop it.
pub struct ServerHandle {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    serving: Option<tokio::task::JoinHandle<()>>,
    background: Vec<tokio::task::JoinHandle<()>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl ServerHandle {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving (streams end) and waits for the server thread.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        for t in self.background.drain(..) {
            t.abort();
        }
        if let Some(rt) = self.runtime.take() {
            let serving = self.serving.take();
            // on a thread of its own: the handle may be dropped inside another
            // runtime (tests), where blocking is not allowed
            let t = std::thread::spawn(move || {
                if let Some(t) = serving {
                    // streams end at once; give the server a moment to say so
                    let _ = rt.block_on(async {
                        tokio::time::timeout(Duration::from_millis(500), t).await
                    });
                }
                rt.shutdown_timeout(Duration::from_millis(200));
            });
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

fn read_file(p: &std::path::Path, what: &str) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{what} {}: {e}", p.display()))
}

/// Binds `addr` and serves `dev` on a runtime of its own (two threads, idle when
/// nothing happens). Returns once the port listens: a client that connects after
/// this call returns is served.
pub fn spawn(dev: Arc<Device>, addr: &str, opts: ServeOptions) -> Result<ServerHandle, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("p4runtime")
        .enable_all()
        .build()
        .map_err(|e| format!("gRPC server runtime: {e}"))?;
    let sock: SocketAddr = resolve(addr)?;
    let std_listener = std::net::TcpListener::bind(sock)
        .map_err(|e| format!("gRPC server: cannot listen on {addr}: {e}"))?;
    std_listener
        .set_nonblocking(true)
        .map_err(|e| format!("gRPC server: {e}"))?;
    let listener = {
        let _in_runtime = runtime.enter();
        tokio::net::TcpListener::from_std(std_listener)
            .map_err(|e| format!("gRPC server: cannot listen on {addr}: {e}"))?
    };
    let local = listener
        .local_addr()
        .map_err(|e| format!("gRPC server: {e}"))?;
    let mut builder = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .http2_keepalive_interval(None);
    if let Some(t) = &opts.tls {
        let cert = read_file(&t.cert, "--grpc-server-cert")?;
        let key = read_file(&t.key, "--grpc-server-key")?;
        let mut cfg = tonic::transport::ServerTlsConfig::new()
            .identity(tonic::transport::Identity::from_pem(cert, key));
        if let Some(ca) = &t.ca {
            let ca = read_file(ca, "--grpc-server-cacert")?;
            cfg = cfg
                .client_ca_root(tonic::transport::Certificate::from_pem(ca))
                .client_auth_optional(!t.client_auth);
        } else if t.client_auth {
            return Err(
                "--grpc-server-with-client-auth needs --grpc-server-cacert (the CA of the clients)"
                    .into(),
            );
        }
        builder = builder
            .tls_config(cfg)
            .map_err(|e| format!("gRPC server TLS: {e}"))?;
    }
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let svc = Service::new(dev.clone()).into_server();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let router = builder.add_service(svc);
    let serving = runtime.spawn(async move {
        let r = router
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stop_rx.await;
            })
            .await;
        if let Err(e) = r {
            eprintln!("p4jet: gRPC server: {e}");
        }
    });
    let background = dev.start_background(runtime.handle());
    Ok(ServerHandle {
        addr: local,
        shutdown: Some(stop_tx),
        serving: Some(serving),
        background,
        runtime: Some(runtime),
    })
}

/// `host:port`, `[v6]:port`, or `localhost:port`.
fn resolve(addr: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs()
        .map_err(|e| format!("bad gRPC server address {addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("bad gRPC server address {addr}"))
}
