//! The gRPC server end to end over loopback, with the runtime model's test double
//! (`Recorder` around `Null`) behind it: arbitration, pipeline config, writes as the
//! model updates they become, the error statuses clients key on, and malformed
//! requests. The real switch and the real clients are tested in
//! `crates/p4jet/tests/p4rt_*.rs`.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use p4jet_p4rt::proto::google::rpc::Status as RpcStatus;
use p4jet_p4rt::proto::p4::config::v1::P4Info;
use p4jet_p4rt::proto::p4::v1::p4_runtime_client::P4RuntimeClient;
use p4jet_p4rt::proto::p4::v1::*;
use p4jet_p4rt::{Device, ServeOptions, ServerHandle, SharedRuntime};
use p4jet_runtime::testing::{Null, Recorder};
use p4jet_runtime::{FieldMatch as RtField, Update as RtUpdate};
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use tonic::transport::Channel;

type Rec = Arc<Mutex<Recorder<Null>>>;

fn corpus(f: &str) -> String {
    format!("{}/../../tests/corpus/{f}", env!("CARGO_MANIFEST_DIR"))
}

fn p4info() -> P4Info {
    let b = std::fs::read(format!(
        "{}/tests/data/p4rt_switch.p4info.binpb",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    P4Info::decode(b.as_slice()).unwrap()
}

fn json() -> Vec<u8> {
    std::fs::read(corpus("p4rt_switch/p4rt_switch.json")).unwrap()
}

struct Env {
    rec: Rec,
    _server: ServerHandle,
    addr: String,
}

fn start(device_id: u64) -> Env {
    let rec: Rec = Arc::new(Mutex::new(Recorder::new(Null::new(None))));
    let shared: SharedRuntime = rec.clone();
    let dev = Arc::new(Device::new(device_id, shared, None));
    let server = p4jet_p4rt::spawn(dev, "127.0.0.1:0", ServeOptions { tls: None }).unwrap();
    let addr = format!("http://{}", server.local_addr());
    Env {
        rec,
        _server: server,
        addr,
    }
}

async fn client(e: &Env) -> P4RuntimeClient<Channel> {
    let ch = Channel::from_shared(e.addr.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    P4RuntimeClient::new(ch)
}

fn eid(v: u64) -> Option<Uint128> {
    Some(Uint128 { high: 0, low: v })
}

/// A StreamChannel: a sender of requests and the responses.
struct Session {
    tx: mpsc::Sender<StreamMessageRequest>,
    rx: tonic::Streaming<StreamMessageResponse>,
}

impl Session {
    async fn open(c: &mut P4RuntimeClient<Channel>) -> Session {
        let (tx, rx) = mpsc::channel(16);
        let resp = c.stream_channel(ReceiverStream::new(rx)).await.unwrap();
        Session {
            tx,
            rx: resp.into_inner(),
        }
    }

    async fn arbitrate(&self, dev: u64, id: u64) {
        self.tx
            .send(StreamMessageRequest {
                update: Some(stream_message_request::Update::Arbitration(
                    MasterArbitrationUpdate {
                        device_id: dev,
                        election_id: eid(id),
                        ..Default::default()
                    },
                )),
            })
            .await
            .unwrap();
    }

    async fn next(&mut self) -> Result<StreamMessageResponse, tonic::Status> {
        tokio::time::timeout(Duration::from_secs(5), self.rx.next())
            .await
            .expect("no stream message within 5 s")
            .expect("stream ended")
    }

    /// (status code, election id low) of the next arbitration update.
    async fn arb(&mut self) -> (i32, u64) {
        match self.next().await.unwrap().update {
            Some(stream_message_response::Update::Arbitration(a)) => {
                (a.status.unwrap().code, a.election_id.unwrap().low)
            }
            other => panic!("expected arbitration, got {other:?}"),
        }
    }
}

fn set_request(action: i32, dc: Vec<u8>, id: u64) -> SetForwardingPipelineConfigRequest {
    SetForwardingPipelineConfigRequest {
        device_id: 1,
        election_id: eid(id),
        action,
        config: Some(ForwardingPipelineConfig {
            p4info: Some(p4info()),
            p4_device_config: dc,
            cookie: Some(forwarding_pipeline_config::Cookie { cookie: 42 }),
        }),
        ..Default::default()
    }
}

fn details(st: &tonic::Status) -> Vec<Error> {
    let rs = RpcStatus::decode(st.details()).unwrap();
    rs.details
        .iter()
        .map(|d| {
            assert_eq!(d.type_url, "type.googleapis.com/p4.v1.Error");
            Error::decode(d.value.as_slice()).unwrap()
        })
        .collect()
}

fn exact(id: u32, v: &[u8]) -> FieldMatch {
    p4_field(
        id,
        field_match::FieldMatchType::Exact(field_match::Exact { value: v.to_vec() }),
    )
}

fn p4_field(id: u32, t: field_match::FieldMatchType) -> FieldMatch {
    FieldMatch {
        field_id: id,
        field_match_type: Some(t),
    }
}

fn action(id: u32, params: &[(u32, &[u8])]) -> Option<TableAction> {
    Some(TableAction {
        r#type: Some(table_action::Type::Action(Action {
            action_id: id,
            params: params
                .iter()
                .map(|(i, v)| action::Param {
                    param_id: *i,
                    value: v.to_vec(),
                })
                .collect(),
        })),
    })
}

fn insert(te: TableEntry) -> Update {
    Update {
        r#type: update::Type::Insert as i32,
        entity: Some(Entity {
            entity: Some(entity::Entity::TableEntry(te)),
        }),
    }
}

fn write(id: u64, ups: Vec<Update>, atomicity: i32) -> WriteRequest {
    WriteRequest {
        device_id: 1,
        election_id: eid(id),
        updates: ups,
        atomicity,
        ..Default::default()
    }
}

const DMAC: u32 = 45595255;
const FORWARD: u32 = 33244565;
const ACL: u32 = 35523576;
const ACL_DROP: u32 = 26774763;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitration_primary_backup_failover() {
    let e = start(1);
    let mut c = client(&e).await;
    assert_eq!(
        c.capabilities(CapabilitiesRequest::default())
            .await
            .unwrap()
            .into_inner()
            .p4runtime_api_version,
        "1.5.0"
    );
    let mut a = Session::open(&mut c).await;
    a.arbitrate(1, 10).await;
    assert_eq!(a.arb().await, (0, 10));
    let mut b = Session::open(&mut c).await;
    b.arbitrate(1, 5).await;
    assert_eq!(b.arb().await, (6, 10)); // ALREADY_EXISTS "Is backup"
    // duplicate election id: the stream ends with INVALID_ARGUMENT
    let mut d = Session::open(&mut c).await;
    d.arbitrate(1, 10).await;
    assert_eq!(d.next().await.unwrap_err().code(), Code::InvalidArgument);
    // unknown device: NOT_FOUND
    let mut x = Session::open(&mut c).await;
    x.arbitrate(7, 99).await;
    assert_eq!(x.next().await.unwrap_err().code(), Code::NotFound);
    // the backup may not write
    let st = c
        .set_forwarding_pipeline_config(set_request(3, json(), 5))
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::PermissionDenied);
    // the primary's stream ends: the backup becomes primary
    drop(a);
    assert_eq!(b.arb().await, (0, 5));
    c.set_forwarding_pipeline_config(set_request(3, json(), 5))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_config_and_errors() {
    let e = start(1);
    let mut c = client(&e).await;
    let st = c
        .get_forwarding_pipeline_config(GetForwardingPipelineConfigRequest {
            device_id: 1,
            response_type: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::FailedPrecondition);
    assert_eq!(
        st.message(),
        "No forwarding pipeline config set for this device"
    );
    // no stream yet: requests without election id pass arbitration (as PI)
    let mut s = Session::open(&mut c).await;
    s.arbitrate(1, 1).await;
    assert_eq!(s.arb().await, (0, 1));
    let st = c.write(write(1, vec![], 0)).await.unwrap_err();
    assert_eq!(st.code(), Code::FailedPrecondition);
    assert_eq!(
        st.message(),
        "No forwarding pipeline config set for this device"
    );
    // a JSON that does not match the P4Info
    let other = std::fs::read(corpus("basic_l2/basic_l2.json")).unwrap();
    let st = c
        .set_forwarding_pipeline_config(set_request(3, other, 1))
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::InvalidArgument, "{st:?}");
    assert!(st.message().contains("does not match the P4Info"), "{st:?}");
    // not JSON, not a P4DeviceConfig
    let st = c
        .set_forwarding_pipeline_config(set_request(3, vec![0xff, 0x01], 1))
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::InvalidArgument);
    // the JSON wrapped in p4.tmp.P4DeviceConfig, as ONOS and the tutorials send it
    let wrapped = p4jet_p4rt::proto::p4::tmp::P4DeviceConfig {
        reassign: true,
        extras: None,
        device_data: json(),
    }
    .encode_to_vec();
    c.set_forwarding_pipeline_config(set_request(3, wrapped.clone(), 1))
        .await
        .unwrap();
    for (ty, info, dc) in [
        (0, true, true),
        (1, false, false),
        (2, true, false),
        (3, false, true),
    ] {
        let r = c
            .get_forwarding_pipeline_config(GetForwardingPipelineConfigRequest {
                device_id: 1,
                response_type: ty,
            })
            .await
            .unwrap()
            .into_inner()
            .config
            .unwrap();
        assert_eq!(r.cookie.unwrap().cookie, 42);
        assert_eq!(r.p4info.is_some(), info, "response type {ty}");
        assert_eq!(!r.p4_device_config.is_empty(), dc, "response type {ty}");
        if dc {
            assert_eq!(r.p4_device_config, wrapped);
        }
    }
    // COMMIT without a saved config
    let mut commit = set_request(4, vec![], 1);
    commit.config = None;
    let st = c
        .set_forwarding_pipeline_config(commit.clone())
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::FailedPrecondition);
    c.set_forwarding_pipeline_config(set_request(2, json(), 1))
        .await
        .unwrap();
    c.set_forwarding_pipeline_config(commit).await.unwrap();
    // UNSPECIFIED
    let st = c
        .set_forwarding_pipeline_config(set_request(0, json(), 1))
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::InvalidArgument);
    drop(s);
    let _ = e.rec;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_become_model_updates() {
    let e = start(1);
    let mut c = client(&e).await;
    let mut s = Session::open(&mut c).await;
    s.arbitrate(1, 1).await;
    s.arb().await;
    c.set_forwarding_pipeline_config(set_request(3, json(), 1))
        .await
        .unwrap();
    e.rec.lock().unwrap().take();
    // an exact entry and an acl entry with ternary, range and optional fields
    let dmac = TableEntry {
        table_id: DMAC,
        r#match: vec![exact(1, &[0, 0, 0, 0, 0, 7])],
        action: action(FORWARD, &[(1, &[3])]),
        ..Default::default()
    };
    let acl = TableEntry {
        table_id: ACL,
        r#match: vec![
            p4_field(
                1,
                field_match::FieldMatchType::Ternary(field_match::Ternary {
                    value: vec![10, 0, 0, 0],
                    mask: vec![255, 0, 0, 0],
                }),
            ),
            p4_field(
                2,
                field_match::FieldMatchType::Range(field_match::Range {
                    low: vec![0x10],
                    high: vec![0x20],
                }),
            ),
            p4_field(
                3,
                field_match::FieldMatchType::Optional(field_match::Optional { value: vec![17] }),
            ),
        ],
        action: action(ACL_DROP, &[]),
        priority: 10,
        ..Default::default()
    };
    c.write(write(1, vec![insert(dmac.clone()), insert(acl)], 0))
        .await
        .unwrap();
    let ups = e.rec.lock().unwrap().take_updates();
    assert_eq!(ups.len(), 2, "{ups:?}");
    match &ups[0] {
        RtUpdate::AddEntry { entry, .. } => {
            assert_eq!(
                entry.key.fields,
                vec![RtField::Exact(vec![0, 0, 0, 0, 0, 7])]
            );
            match &entry.action {
                p4jet_runtime::EntryAction::Direct(a) => assert_eq!(a.args, vec![vec![0, 3]]),
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
    match &ups[1] {
        RtUpdate::AddEntry { entry, .. } => {
            assert_eq!(
                entry.key.fields,
                vec![
                    RtField::Ternary {
                        value: vec![10, 0, 0, 0],
                        mask: vec![255, 0, 0, 0]
                    },
                    RtField::Range {
                        low: vec![0, 0x10],
                        high: vec![0, 0x20]
                    },
                    RtField::Ternary {
                        value: vec![17],
                        mask: vec![0xff]
                    },
                ]
            );
            assert_eq!(
                entry.key.priority,
                p4jet_runtime::priority_from_p4runtime(10)
            );
        }
        other => panic!("{other:?}"),
    }

    // errors: one p4.v1.Error per update, OK for the good ones
    let mut wide = dmac.clone();
    wide.r#match = vec![exact(1, &[1, 0, 0, 0, 0, 0, 0])]; // 49 bits
    let mut unknown = dmac.clone();
    unknown.table_id = 12345;
    let mut ternary_no_prio = dmac.clone();
    ternary_no_prio.table_id = ACL;
    ternary_no_prio.r#match = vec![];
    ternary_no_prio.action = action(ACL_DROP, &[]);
    let st = c
        .write(write(
            1,
            vec![
                insert(dmac.clone()),
                insert(wide.clone()),
                insert(unknown.clone()),
                insert(ternary_no_prio),
            ],
            0,
        ))
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::Unknown);
    let d = details(&st);
    let codes: Vec<i32> = d.iter().map(|e| e.canonical_code).collect();
    assert_eq!(codes, vec![0, 3, 5, 3], "{d:?}");
    // CONTINUE_ON_ERROR: the good update went to the model
    assert_eq!(e.rec.lock().unwrap().take_updates().len(), 1);

    // ROLLBACK_ON_ERROR: a refused update aborts the batch; nothing reaches the model
    let st = c
        .write(write(1, vec![insert(dmac.clone()), insert(wide)], 1))
        .await
        .unwrap_err();
    let codes: Vec<i32> = details(&st).iter().map(|e| e.canonical_code).collect();
    assert_eq!(codes, vec![10, 3]);
    assert!(e.rec.lock().unwrap().take_updates().is_empty());

    // a backup's write: PERMISSION_DENIED
    let st = c.write(write(7, vec![insert(dmac)], 0)).await.unwrap_err();
    assert_eq!(st.code(), Code::PermissionDenied);
}

/// A codec that sends bytes as they are: malformed protobuf on the wire.
#[derive(Clone, Default)]
struct RawCodec;

struct RawEnc;
struct RawDec;

impl tonic::codec::Encoder for RawEnc {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(
        &mut self,
        item: Vec<u8>,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        use bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawDec {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Vec<u8>>, tonic::Status> {
        use bytes::Buf;
        let mut v = vec![0; src.remaining()];
        src.copy_to_slice(&mut v);
        Ok(Some(v))
    }
}

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEnc;
    type Decoder = RawDec;
    fn encoder(&mut self) -> RawEnc {
        RawEnc
    }
    fn decoder(&mut self) -> RawDec {
        RawDec
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_protobuf_is_refused_and_the_server_keeps_serving() {
    let e = start(1);
    let ch = Channel::from_shared(e.addr.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut g = tonic::client::Grpc::new(ch.clone());
    for (path, body) in [
        ("/p4.v1.P4Runtime/Write", vec![0xff, 0xff, 0xff, 0xff]),
        ("/p4.v1.P4Runtime/Write", vec![0x0a, 0x80]),
        (
            "/p4.v1.P4Runtime/SetForwardingPipelineConfig",
            vec![0x2a, 0x05, 0x0a],
        ),
        ("/p4.v1.P4Runtime/Capabilities", vec![0x08]),
        ("/p4.v1.P4Runtime/NoSuchMethod", vec![]),
    ] {
        g.ready().await.unwrap();
        let r: Result<tonic::Response<Vec<u8>>, tonic::Status> = g
            .unary(tonic::Request::new(body), path.parse().unwrap(), RawCodec)
            .await;
        let st = r.unwrap_err();
        assert!(
            matches!(
                st.code(),
                Code::Internal | Code::InvalidArgument | Code::Unimplemented
            ),
            "{path}: {st:?}"
        );
    }
    // still serving
    let mut c = P4RuntimeClient::new(ch);
    c.capabilities(CapabilitiesRequest::default())
        .await
        .unwrap();
}

/// A CA, a server certificate for 127.0.0.1/localhost and a client certificate, as
/// PEM files in `dir`.
fn certificates(dir: &std::path::Path) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // distinct names: OpenSSL takes a certificate whose issuer is its subject for a
    // self-signed one
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "p4jet test CA");
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    for (name, sans) in [
        (
            "server",
            vec!["localhost".to_string(), "127.0.0.1".to_string()],
        ),
        ("client", vec!["controller".to_string()]),
    ] {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(sans).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("p4jet test {name}"));
        let cert = params.signed_by(&key, &ca).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_and_without_client_certificates() {
    use tonic::transport::{Certificate, ClientTlsConfig, Identity};
    let dir = std::env::temp_dir().join(format!("p4rt-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    certificates(&dir);
    let rd = |f: &str| std::fs::read(dir.join(f)).unwrap();
    for client_auth in [false, true] {
        let rec: Rec = Arc::new(Mutex::new(Recorder::new(Null::new(None))));
        let dev = Arc::new(Device::new(1, rec.clone() as SharedRuntime, None));
        let tls = p4jet_p4rt::TlsFiles {
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
            ca: Some(dir.join("ca.pem")),
            client_auth,
        };
        let server =
            p4jet_p4rt::spawn(dev, "127.0.0.1:0", ServeOptions { tls: Some(tls) }).unwrap();
        let url = format!("https://localhost:{}", server.local_addr().port());
        let caps = |tls: ClientTlsConfig| {
            let url = url.clone();
            async move {
                let ch = Channel::from_shared(url)
                    .unwrap()
                    .tls_config(tls)
                    .unwrap()
                    .connect()
                    .await?;
                P4RuntimeClient::new(ch)
                    .capabilities(CapabilitiesRequest::default())
                    .await
                    .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
                Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
            }
        };
        let ca = || ClientTlsConfig::new().ca_certificate(Certificate::from_pem(rd("ca.pem")));
        // a client that trusts the CA and shows its certificate
        caps(ca().identity(Identity::from_pem(rd("client.pem"), rd("client.key"))))
            .await
            .unwrap();
        // without a client certificate: refused only with client auth
        let r = caps(ca()).await;
        assert_eq!(r.is_err(), client_auth, "client_auth {client_auth}: {r:?}");
        // plain text is refused
        let plain = Channel::from_shared(format!("http://{}", server.local_addr()))
            .unwrap()
            .connect()
            .await;
        if let Ok(ch) = plain {
            assert!(
                P4RuntimeClient::new(ch)
                    .capabilities(CapabilitiesRequest::default())
                    .await
                    .is_err()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
