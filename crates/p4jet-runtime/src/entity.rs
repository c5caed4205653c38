//! The values operations carry and reads return: match keys, actions, table entries,
//! profile members and groups, counter, meter and register values, multicast groups,
//! clone sessions, digests, ports.
//!
//! Byte strings ([`Bytes`]) are big-endian and hold a value of a known width in
//! `ceil(width / 8)` bytes; runtimes accept shorter or longer strings and keep the low
//! `width` bits, as bmv2 does, unless an operation says otherwise.

use crate::ids::{
    ActionId, DigestId, EntryHandle, GroupId, McGroupId, McNodeHandle, MemberId, PortId, SessionId,
    TableId,
};

/// A big-endian byte string (a field value, a mask, an action parameter, a register
/// cell, a digest sample).
pub type Bytes = Vec<u8>;

/// The priority bmv2 reports for entries of tables without priorities (exact, LPM).
pub const NO_PRIORITY: i32 = -1;

/// The match of one key field in an entry.
///
/// Kinds follow the key field's match kind ([`crate::schema::MatchKind`]):
/// `optional` fields take [`FieldMatch::Ternary`] with a full mask (a value) or an
/// all-zero mask (a wildcard), which is how bmv2 stores them (see
/// [`crate::schema::KeyField::optional`] and [`crate::schema::KeyField::wildcard`]);
/// a `$valid$` key (an exact match on a header's validity) takes [`FieldMatch::Exact`]
/// of one byte or [`FieldMatch::Valid`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FieldMatch {
    /// Exact value.
    Exact(Bytes),
    /// Longest prefix: a value and the prefix length in bits (bits past the prefix
    /// need not be zero).
    Lpm {
        /// Value.
        value: Bytes,
        /// Prefix length in bits.
        prefix_len: u32,
    },
    /// Value and mask (the value need not be pre-masked).
    Ternary {
        /// Value.
        value: Bytes,
        /// Mask.
        mask: Bytes,
    },
    /// Inclusive bounds.
    Range {
        /// Lower bound.
        low: Bytes,
        /// Upper bound.
        high: Bytes,
    },
    /// Legacy P4_14 `valid` match: whether the header is valid.
    Valid(bool),
}

/// The match key of an entry: one [`FieldMatch`] per key field, in the table's key
/// order, and the priority.
///
/// `priority` is bmv2's: meaningful for tables with ternary, range or optional fields,
/// where the *smallest* number wins; other tables ignore it and report
/// [`NO_PRIORITY`]. P4Runtime's priorities run the other way (the largest wins):
/// convert with [`priority_from_p4runtime`] and [`priority_to_p4runtime`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MatchKey {
    /// One match per key field.
    pub fields: Vec<FieldMatch>,
    /// bmv2 priority (smallest wins).
    pub priority: i32,
}

impl MatchKey {
    /// A key without priority.
    pub fn new(fields: Vec<FieldMatch>) -> MatchKey {
        MatchKey {
            fields,
            priority: NO_PRIORITY,
        }
    }

    /// A key with a (bmv2) priority.
    pub fn with_priority(fields: Vec<FieldMatch>, priority: i32) -> MatchKey {
        MatchKey { fields, priority }
    }
}

/// bmv2's priority for a P4Runtime priority (> 0, the largest wins): the order is
/// reversed so that the largest P4Runtime priority is the smallest bmv2 number.
/// [`priority_to_p4runtime`] is its inverse.
pub fn priority_from_p4runtime(p4rt: i32) -> i32 {
    i32::MAX - p4rt.max(0)
}

/// The P4Runtime priority of a bmv2 priority made by [`priority_from_p4runtime`].
pub fn priority_to_p4runtime(bmv2: i32) -> i32 {
    i32::MAX - bmv2.max(0)
}

/// An action with its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionCall {
    /// The action.
    pub action: ActionId,
    /// One big-endian value per action parameter, in declaration order.
    pub args: Vec<Bytes>,
}

impl ActionCall {
    /// `action(args...)`.
    pub fn new(action: ActionId, args: Vec<Bytes>) -> ActionCall {
        ActionCall { action, args }
    }
}

/// One action of a one-shot selector entry (P4Runtime's `ActionProfileAction`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WeightedAction {
    /// The action.
    pub action: ActionCall,
    /// How many times it is chosen relative to the others (at least 1).
    pub weight: u32,
    /// The port whose state this choice follows (kept and reported; p4jet has no
    /// port-down events yet, so it never removes the choice).
    pub watch_port: Option<PortId>,
}

/// What a table entry or a default entry does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EntryAction {
    /// An action of the table (direct tables).
    Direct(ActionCall),
    /// An action profile member (indirect tables).
    Member(MemberId),
    /// An action selector group (tables with a selector).
    Group(GroupId),
    /// One-shot selector programming (P4Runtime's `action_profile_action_set`): the
    /// runtime makes a group of these actions, owned by the entry and removed with it,
    /// and reads it back in this form.
    OneShot(Vec<WeightedAction>),
}

/// Idle-timeout state of an entry of a table with `support_timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EntryTtl {
    /// The entry's idle timeout (ms; 0 = none).
    pub timeout_ms: u64,
    /// Milliseconds since the entry was last hit by a packet (or, when never hit,
    /// since it was added or its timeout set).
    pub idle_ms: u64,
}

/// A table entry as reads return it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableEntry {
    /// Its handle.
    pub handle: EntryHandle,
    /// Its key, normalised as bmv2 reports it (value bits past a prefix or mask
    /// cleared, fields truncated to their width).
    pub key: MatchKey,
    /// What it does.
    pub action: EntryAction,
    /// Set for tables that support idle timeouts, when the entry has a timeout.
    pub ttl: Option<EntryTtl>,
    /// A const entry of the program.
    pub is_const: bool,
}

/// A new table entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NewEntry {
    /// Its key.
    pub key: MatchKey,
    /// What it does.
    pub action: EntryAction,
    /// Idle timeout in ms (tables with `support_timeout` only; None = none).
    pub timeout_ms: Option<u64>,
}

impl NewEntry {
    /// An entry without idle timeout.
    pub fn new(key: MatchKey, action: EntryAction) -> NewEntry {
        NewEntry {
            key,
            action,
            timeout_ms: None,
        }
    }
}

/// How an operation names a table entry: by the handle the switch gave it (bmv2), or
/// by its key and priority (P4Runtime).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EntryRef {
    /// A handle.
    Handle(EntryHandle),
    /// A key (with its priority for tables that have them).
    Key(MatchKey),
}

/// Where a page of [`crate::Runtime::table_entries`] starts: opaque, from
/// [`EntryPage::next`] ([`EntryCursor::START`] for the first page).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EntryCursor(pub u32);

impl EntryCursor {
    /// The first page.
    pub const START: EntryCursor = EntryCursor(0);
}

/// A page of table entries, in ascending slot order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EntryPage {
    /// The entries.
    pub entries: Vec<TableEntry>,
    /// Where the next page starts; None after the last page. Entries added or
    /// removed between pages may or may not appear (reads are not snapshots).
    pub next: Option<EntryCursor>,
}

/// An action profile member.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Member {
    /// Its id.
    pub id: MemberId,
    /// Its action.
    pub action: ActionCall,
}

/// A member of a selector group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupMember {
    /// The member.
    pub member: MemberId,
    /// Its weight (at least 1): a member of weight `w` is chosen `w` times as often
    /// as one of weight 1. bmv2's groups are sets (weight 1); p4jet selects among the
    /// group's members sorted by id, each repeated `weight` times, so a group whose
    /// weights are all 1 selects exactly as bmv2 does.
    pub weight: u32,
    /// The port whose state the member follows (kept and reported, see
    /// [`WeightedAction::watch_port`]).
    pub watch_port: Option<PortId>,
}

impl GroupMember {
    /// A member of weight 1 without watch port (what bmv2's groups hold).
    pub fn new(member: MemberId) -> GroupMember {
        GroupMember {
            member,
            weight: 1,
            watch_port: None,
        }
    }
}

/// An action selector group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Group {
    /// Its id.
    pub id: GroupId,
    /// Its members, sorted by member id.
    pub members: Vec<GroupMember>,
    /// Most members (sum of weights) it may hold (0 = the profile's limit).
    pub max_size: u32,
}

/// A counter cell (bmv2 counts bytes and packets in every counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CounterValue {
    /// Bytes.
    pub bytes: u64,
    /// Packets.
    pub packets: u64,
}

/// One rate of a meter: bmv2's form.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MeterRate {
    /// Information rate in units (packets or bytes, by the meter's type) per
    /// microsecond.
    pub units_per_us: f64,
    /// Burst size in units.
    pub burst: u32,
}

/// A meter's configuration: its rates, committed rate first (v1model meters are
/// two-rate three-color meters, RFC 2698: committed then peak). No rates: the meter
/// is not configured and marks every packet green.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MeterConfig {
    /// Rates, committed first.
    pub rates: Vec<MeterRate>,
}

impl MeterConfig {
    /// A two-rate three-color meter from P4Runtime's `MeterConfig` fields: rates in
    /// units per second, bursts in units.
    pub fn tr_tcm(cir: u64, cburst: u64, pir: u64, pburst: u64) -> MeterConfig {
        let rate = |per_s: u64| per_s as f64 / 1e6;
        let burst = |b: u64| u32::try_from(b).unwrap_or(u32::MAX);
        MeterConfig {
            rates: vec![
                MeterRate {
                    units_per_us: rate(cir),
                    burst: burst(cburst),
                },
                MeterRate {
                    units_per_us: rate(pir),
                    burst: burst(pburst),
                },
            ],
        }
    }

    /// `(cir, cburst, pir, pburst)` in units per second and units, for P4Runtime
    /// (None when not configured or not two-rate).
    pub fn as_tr_tcm(&self) -> Option<(u64, u64, u64, u64)> {
        match self.rates.as_slice() {
            [c, p] => Some((
                (c.units_per_us * 1e6).round() as u64,
                u64::from(c.burst),
                (p.units_per_us * 1e6).round() as u64,
                u64::from(p.burst),
            )),
            _ => None,
        }
    }

    /// Whether the meter is configured.
    pub fn is_configured(&self) -> bool {
        !self.rates.is_empty()
    }
}

/// One copy made by a multicast group or a clone session: to a port, tagged with an
/// instance (bmv2's replication id, `egress_rid` of the copy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Replica {
    /// Egress port.
    pub port: PortId,
    /// Instance (replication id; 16 bits in bmv2).
    pub instance: u32,
}

/// A multicast node of bmv2's PRE (an L1 entry with its L2 port map).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct McNode {
    /// Its handle.
    pub handle: McNodeHandle,
    /// Replication id (`egress_rid` of its copies).
    pub rid: u32,
    /// Ports, ascending.
    pub ports: Vec<PortId>,
    /// LAG indexes, ascending.
    pub lags: Vec<u32>,
    /// The group it is associated with.
    pub group: Option<McGroupId>,
}

/// A multicast group of bmv2's PRE.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct McGroup {
    /// Its id (mgid).
    pub id: McGroupId,
    /// Its nodes, in association order.
    pub nodes: Vec<McNodeHandle>,
}

/// The whole packet replication engine: bmv2's view (groups, nodes, LAGs). The
/// P4Runtime view of a group is [`PreState::replicas`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PreState {
    /// Groups by ascending id.
    pub groups: Vec<McGroup>,
    /// Nodes by ascending handle.
    pub nodes: Vec<McNode>,
    /// LAGs: index and member ports, ascending.
    pub lags: Vec<(u32, Vec<PortId>)>,
}

impl PreState {
    /// The copies group `id` makes (P4Runtime's replicas): one per (node, port) in
    /// association order, ports ascending within a node, instance = the node's rid.
    /// LAG members are not expanded. None when the group does not exist.
    pub fn replicas(&self, id: McGroupId) -> Option<Vec<Replica>> {
        let g = self.groups.iter().find(|g| g.id == id)?;
        let mut out = vec![];
        for h in &g.nodes {
            if let Some(n) = self.nodes.iter().find(|n| n.handle == *h) {
                out.extend(n.ports.iter().map(|&port| Replica {
                    port,
                    instance: n.rid,
                }));
            }
        }
        Some(out)
    }
}

/// Where a clone session sends its copies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CloneTarget {
    /// bmv2's `mirroring_session_add`: a port, a multicast group, or both.
    Bmv2 {
        /// Egress port.
        port: Option<PortId>,
        /// Multicast group.
        mgid: Option<McGroupId>,
    },
    /// P4Runtime's `CloneSessionEntry` replicas (one copy each; a single replica of
    /// instance 0 is a plain port session).
    Replicas(Vec<Replica>),
}

/// A clone (mirroring) session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CloneSession {
    /// Session id (0..=32767 in simple_switch).
    pub id: SessionId,
    /// Where the copies go.
    pub target: CloneTarget,
    /// P4Runtime's class of service (kept and reported; simple_switch has no
    /// per-session queue).
    pub class_of_service: u32,
    /// Copies are truncated to this many bytes (0 = whole packets).
    pub packet_length_bytes: u32,
}

impl CloneSession {
    /// A bmv2 session to a port.
    pub fn to_port(id: SessionId, port: PortId) -> CloneSession {
        CloneSession {
            id,
            target: CloneTarget::Bmv2 {
                port: Some(port),
                mgid: None,
            },
            class_of_service: 0,
            packet_length_bytes: 0,
        }
    }
}

/// How a digest (learn list) sends its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DigestConfig {
    /// Samples wait at most this long before they are sent (ns; 0 = they wait
    /// until a list is full). bmv2's learning timeout (`bm_learning_set_timeout`, ms).
    pub max_timeout_ns: u64,
    /// Most samples per list (bmv2's buffer size; at least 1).
    pub max_list_size: u32,
    /// A sample sent and not acknowledged within this time may be sent again (ns;
    /// 0 = never: it is filtered until acknowledged, as bmv2 does).
    pub ack_timeout_ns: u64,
}

impl Default for DigestConfig {
    /// bmv2's defaults: 1 s, 16 samples, no ack timeout.
    fn default() -> Self {
        DigestConfig {
            max_timeout_ns: 1_000_000_000,
            max_list_size: 16,
            ack_timeout_ns: 0,
        }
    }
}

/// A list of digest samples sent to the controller (bmv2's learning notification,
/// P4Runtime's `DigestList`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DigestList {
    /// The digest.
    pub digest: DigestId,
    /// The list's id, to acknowledge it (bmv2's buffer id).
    pub list_id: u64,
    /// The samples: each field big-endian, `ceil(width / 8)` bytes, concatenated in
    /// the digest's field order.
    pub samples: Vec<Bytes>,
    /// When it was sent (ns of the switch clock).
    pub timestamp_ns: u64,
}

/// What [`crate::Runtime::digest_log`] returns: the latest lists sent and the samples
/// still waiting.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DigestLog {
    /// Latest lists sent, oldest first.
    pub sent: Vec<DigestList>,
    /// Samples waiting to be sent, oldest first.
    pub waiting: Vec<(DigestId, Bytes)>,
}

/// Entries of one table whose idle timeout expired (P4Runtime's
/// `IdleTimeoutNotification`). Each expiry is reported once; an entry hit again and
/// idle again is reported again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleTimeout {
    /// The table.
    pub table: TableId,
    /// The entries, as they are now.
    pub entries: Vec<TableEntry>,
}

/// A port of the switch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortInfo {
    /// Port number.
    pub port: PortId,
    /// Interface name.
    pub iface: String,
    /// Pcap file of the port, if any.
    pub pcap: Option<String>,
    /// Link state.
    pub up: bool,
}

/// The forwarding workers of a running switch (p4jet): how many forward, how many
/// may, and which worker serves each shard (a set of receive queues, one per port:
/// an AF_PACKET fanout socket, an AF_XDP queue or a DPDK queue pair).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Workers {
    /// Workers forwarding now.
    pub active: u32,
    /// The count asked for last (`set_workers`, or the automatic scaler), reached
    /// once the shards have been handed over.
    pub requested: u32,
    /// Most workers (the number of shards, `--max-workers`).
    pub max: u32,
    /// `--workers auto:MIN..MAX`: the range the count moves in by itself (None when
    /// it is fixed).
    pub auto: Option<(u32, u32)>,
    /// Per shard, the number of the worker serving it.
    pub owners: Vec<u32>,
    /// Changes of the worker count made since the start.
    pub changes: u64,
}

/// Packet counts of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortCounters {
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets dropped (for the drop port, or with no program set: every packet).
    pub drops: u64,
    /// Frames the device or the kernel dropped before the switch read them (a
    /// receive ring full: AF_PACKET and AF_XDP socket drops, DPDK `imissed` +
    /// `rx_nombuf`), over every queue of the port; 0 where nobody counts them.
    pub rx_missed: u64,
    /// Erroneous frames the device received (DPDK `ierrors`).
    pub rx_errors: u64,
    /// Frames the device failed to send (DPDK `oerrors`).
    pub tx_errors: u64,
}

/// Custom CRC parameters (`bm_set_crc16_custom_parameters`, `..._crc32_...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CrcConfig {
    /// Width: 16 or 32.
    pub width: u32,
    /// Polynomial (without the top bit).
    pub polynomial: u64,
    /// Initial remainder.
    pub initial_remainder: u64,
    /// Value XORed into the final remainder.
    pub final_xor_value: u64,
    /// Reflect each input byte.
    pub data_reflected: bool,
    /// Reflect the final remainder.
    pub remainder_reflected: bool,
}

/// Which egress queues a queue setting applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueSelector {
    /// Every queue of every port (the setting becomes the default).
    All,
    /// Every priority queue of one port.
    Port(PortId),
    /// One priority queue of one port (`priority` as simple_switch's RPCs number it).
    Priority(PortId, u32),
}

/// A queue setting (simple_switch's `set_egress_queue_*` RPCs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueSetting {
    /// Depth in packets.
    Depth(u32),
    /// Rate in packets per second (0 = unlimited).
    Rate(u64),
}

/// Information about the switch (`bm_mgmt_get_info` and more).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SwitchInfo {
    /// `--device-id`.
    pub device_id: u64,
    /// `--thrift-port`.
    pub thrift_port: u16,
    /// Notifications socket address, if any.
    pub notifications_socket: Option<String>,
    /// Event logger address, if any.
    pub elogger_socket: Option<String>,
    /// Debugger address, if any.
    pub debugger_socket: Option<String>,
    /// simple_switch's `--enable-swap`: whether bmv2's configuration swap RPCs are
    /// allowed (the Thrift adapter refuses them otherwise; P4Runtime does not care).
    pub swap_enabled: bool,
    /// `--drop-port`.
    pub drop_port: PortId,
    /// `--cpu-port`, if any.
    pub cpu_port: Option<PortId>,
    /// Priority queues per port.
    pub priority_queues: u32,
}

/// The switch clock (`get_time_elapsed_us`, `get_time_since_epoch_us`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ClockReading {
    /// Microseconds since the switch started.
    pub elapsed_us: u64,
    /// Microseconds since the Unix epoch.
    pub since_epoch_us: u64,
}
