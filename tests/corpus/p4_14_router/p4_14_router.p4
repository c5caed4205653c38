/*
 * p4_14_router.p4 -- a P4_14 program compiled by p4c (--std p4-14).
 *
 * What it does
 *   Ethernet, up to two VLAN tags (a P4_14 header stack), IPv4. IPv4
 *   frames are routed: `ipv4_lpm` (lpm on the destination) sets the next
 *   hop (egress port, destination MAC) and decrements the TTL; the IPv4
 *   checksum is verified on input and updated on output (calculated_field);
 *   a frame with TTL 0 or 1 is dropped. `vlan_fix` matches the validity of
 *   the outer tag (a P4_14 `valid` key) and the tag's VID and rewrites the
 *   VID. Every routed frame is counted per port in the register `seen`
 *   (register_read / add / register_write) and by the direct counter of
 *   ipv4_lpm; `drops` counts dropped frames by reason. Non-IPv4 frames go to
 *   port 7.
 *
 * P4_14 features exercised
 *   - header_type / header / metadata declarations, parser functions with
 *     return select(latest.field), header stacks with extract(vlan[next])
 *   - field_list, field_list_calculation (csum16), calculated_field with
 *     verify and update
 *   - modify_field, add_to_field, subtract_from_field, bit_and, drop(),
 *     no_op, register_read / register_write, count()
 *   - tables with lpm, exact and valid keys; direct counter; apply with
 *     hit/miss blocks; if (valid(...)) in control functions
 */

header_type ethernet_t {
    fields {
        dstAddr   : 48;
        srcAddr   : 48;
        etherType : 16;
    }
}

header_type vlan_t {
    fields {
        pcp       : 3;
        cfi       : 1;
        vid       : 12;
        etherType : 16;
    }
}

header_type ipv4_t {
    fields {
        version        : 4;
        ihl            : 4;
        diffserv       : 8;
        totalLen       : 16;
        identification : 16;
        flags          : 3;
        fragOffset     : 13;
        ttl            : 8;
        protocol       : 8;
        hdrChecksum    : 16;
        srcAddr        : 32;
        dstAddr        : 32;
    }
}

header_type meta_t {
    fields {
        seen_count : 32;
        reason     : 8;
    }
}

header ethernet_t ethernet;
header vlan_t vlan[2];
header ipv4_t ipv4;
metadata meta_t meta;

parser start {
    extract(ethernet);
    return select(latest.etherType) {
        0x8100 : parse_vlan;
        0x0800 : parse_ipv4;
        default : ingress;
    }
}

parser parse_vlan {
    extract(vlan[next]);
    return select(latest.etherType) {
        0x8100 : parse_vlan;
        0x0800 : parse_ipv4;
        default : ingress;
    }
}

parser parse_ipv4 {
    extract(ipv4);
    return ingress;
}

field_list ipv4_checksum_list {
    ipv4.version;
    ipv4.ihl;
    ipv4.diffserv;
    ipv4.totalLen;
    ipv4.identification;
    ipv4.flags;
    ipv4.fragOffset;
    ipv4.ttl;
    ipv4.protocol;
    ipv4.srcAddr;
    ipv4.dstAddr;
}

field_list_calculation ipv4_checksum {
    input {
        ipv4_checksum_list;
    }
    algorithm : csum16;
    output_width : 16;
}

calculated_field ipv4.hdrChecksum {
    verify ipv4_checksum;
    update ipv4_checksum;
}

register seen {
    width : 32;
    instance_count : 8;
}

counter drops {
    type : packets;
    instance_count : 4;
}

counter lpm_hits {
    type : packets_and_bytes;
    direct : ipv4_lpm;
}

action set_nhop(port, dmac) {
    modify_field(standard_metadata.egress_spec, port);
    modify_field(ethernet.srcAddr, ethernet.dstAddr);
    modify_field(ethernet.dstAddr, dmac);
    subtract_from_field(ipv4.ttl, 1);
    register_read(meta.seen_count, seen, port);
    add_to_field(meta.seen_count, 1);
    register_write(seen, port, meta.seen_count);
}

action drop_route(reason) {
    modify_field(meta.reason, reason);
    count(drops, reason);
    drop();
}

action drop_ttl(reason) {
    modify_field(meta.reason, reason);
    count(drops, reason);
    drop();
}

action set_vid(vid) {
    modify_field(vlan[0].vid, vid);
    bit_and(vlan[0].pcp, vlan[0].pcp, 3);
}

action to_port(port) {
    modify_field(standard_metadata.egress_spec, port);
}

action nop() {
    no_op();
}

action nop2() {
    no_op();
}

table ipv4_lpm {
    reads {
        ipv4.dstAddr : lpm;
    }
    actions {
        set_nhop;
        drop_route;
    }
    size : 64;
}

table ttl_check {
    reads {
        ipv4.ttl : exact;
    }
    actions {
        drop_ttl;
        nop;
    }
    size : 4;
}

table vlan_fix {
    reads {
        vlan[0] : valid;
        vlan[0].vid : exact;
    }
    actions {
        set_vid;
        nop2;
    }
    size : 16;
}

table other {
    actions {
        to_port;
    }
    size : 1;
}

control ingress {
    apply(vlan_fix);
    if (valid(ipv4)) {
        apply(ttl_check) {
            miss {
                apply(ipv4_lpm);
            }
        }
    } else {
        apply(other);
    }
}

control egress {
}
