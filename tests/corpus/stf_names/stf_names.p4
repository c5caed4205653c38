/*
 * stf_names.p4 -- a direct counter read through named STF entries.
 *
 * What it does
 *   `fib` matches the Ethernet destination exactly and forwards to the port
 *   of the entry; every hit is counted by the direct counter `fib_hits`.
 *   A miss drops. The indexed counter `rx` counts every frame by ingress
 *   port.
 *
 * What the tests exercise (the STF format rather than the program)
 *   - `add ... = $A`: entries named in the test; `check_counter fib_hits($A)`
 *     reads the direct counter of the named entry (its handle)
 *   - `wait` between packets, with entries added and the default action
 *     changed between them
 *   - check_counter on an indexed counter, packets and bytes
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t { }

parser ParserImpl(packet_in pkt,
                  out headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t std_meta) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control VerifyChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control IngressImpl(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t std_meta) {
    direct_counter(CounterType.packets_and_bytes) fib_hits;
    counter(8, CounterType.packets_and_bytes) rx;

    action forward(bit<9> port) {
        fib_hits.count();
        std_meta.egress_spec = port;
    }

    action flood_to(bit<9> port) {
        std_meta.egress_spec = port;
    }

    action drop() {
        mark_to_drop(std_meta);
    }

    table fib {
        key = { hdr.ethernet.dst_addr : exact; }
        actions = { forward; @defaultonly drop; @defaultonly flood_to; }
        counters = fib_hits;
        default_action = drop();
    }

    apply {
        rx.count((bit<32>)std_meta.ingress_port);
        fib.apply();
    }
}

control EgressImpl(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t std_meta) {
    apply { }
}

control ComputeChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(ParserImpl(), VerifyChecksumImpl(), IngressImpl(), EgressImpl(),
         ComputeChecksumImpl(), DeparserImpl()) main;
