"""Deterministic demo corpus: documents, blocks and superseded block versions, as manifest rows.

The built-in corpus is written here (no external data), so the demo works on any machine. With the
NIST SP 800-53 file from ``shared/data`` the demo also gets a real corpus whose Rev. 4 → Rev. 5
changes are real superseded versions.
"""

import datetime as dt
import json
from pathlib import Path

DOMAINS = {
    "security_questionnaire": "Security questionnaire",
    "federal_it": "Federal IT",
    "healthcare_ops": "Healthcare operations",
    "supply_chain": "Supply chain",
    "financial_services": "Financial services",
}

# (domain, document slug, title, authority, [(section, v1 text, v2 text or None, v2 effective)])
_DOCS = [
    (
        "security_questionnaire",
        "sec-arch",
        "Security Architecture Overview",
        0.95,
        [
            (
                "Encryption at rest",
                "Customer-uploaded documents are encrypted at rest with AES-256 at the storage layer using AWS KMS customer-managed keys, with per-tenant key isolation.",
                "Customer-uploaded documents are encrypted at rest with AES-256-GCM at the storage layer using AWS KMS customer-managed keys, with per-tenant key isolation and automatic key rotation every 365 days.",
                "2025-07-01",
            ),
            (
                "Encryption in transit",
                "All traffic between clients and the platform uses TLS 1.2 or higher; TLS 1.0 and 1.1 are disabled on every public endpoint.",
                None,
                None,
            ),
            (
                "Key rotation",
                "Data encryption keys are rotated every 90 days; key rotation events are logged to the central audit trail.",
                None,
                None,
            ),
            (
                "Network segmentation",
                "Production workloads run in isolated VPCs; administrative access requires a bastion host and short-lived credentials.",
                None,
                None,
            ),
            (
                "Backups",
                "Encrypted backups are taken every 24 hours and retained for 35 days in a second region.",
                "Encrypted backups are taken every 12 hours and retained for 35 days in a second region; restores are tested quarterly.",
                "2025-09-15",
            ),
        ],
    ),
    (
        "security_questionnaire",
        "sec-access",
        "Access Control Policy",
        0.9,
        [
            (
                "Multi-factor authentication",
                "Multi-factor authentication is required for all workforce accounts with access to production systems.",
                None,
                None,
            ),
            (
                "Access reviews",
                "Privileged access is reviewed every quarter by the system owner and the security team.",
                "Privileged access is reviewed every month by the system owner and the security team; standard access every quarter.",
                "2025-10-01",
            ),
            (
                "Least privilege",
                "Access is granted on a least-privilege basis through role-based groups; direct grants to individuals are not permitted.",
                None,
                None,
            ),
            (
                "Offboarding",
                "Accounts of departing staff are disabled within 24 hours of their last working day.",
                "Accounts of departing staff are disabled within 4 hours of HR notification.",
                "2025-08-01",
            ),
            (
                "Session timeout",
                "Interactive administrative sessions time out after 15 minutes of inactivity.",
                None,
                None,
            ),
        ],
    ),
    (
        "security_questionnaire",
        "sec-ir",
        "Incident Response Plan",
        0.85,
        [
            (
                "Notification",
                "Customers are notified of a confirmed security incident affecting their data within 72 hours.",
                None,
                None,
            ),
            (
                "Severity levels",
                "Incidents are classified as SEV1 to SEV4; SEV1 incidents page the on-call incident commander immediately.",
                None,
                None,
            ),
            (
                "Post-incident review",
                "A blameless post-incident review is completed within 10 business days of every SEV1 or SEV2 incident.",
                None,
                None,
            ),
            (
                "Forensics",
                "Forensic images of affected hosts are preserved for at least 12 months.",
                None,
                None,
            ),
            (
                "Testing",
                "The incident response plan is exercised at least twice a year through tabletop exercises.",
                None,
                None,
            ),
        ],
    ),
    (
        "security_questionnaire",
        "sec-vendor",
        "Third-Party Risk Standard",
        0.7,
        [
            (
                "Vendor tiers",
                "Vendors are tiered by data access; tier 1 vendors with customer data access are assessed annually.",
                None,
                None,
            ),
            (
                "Subprocessors",
                "The list of subprocessors is published and customers are notified 30 days before a new subprocessor is added.",
                None,
                None,
            ),
            (
                "Assessments",
                "Tier 1 vendor assessments include a SOC 2 Type II report or an equivalent on-site review.",
                None,
                None,
            ),
            (
                "Contract terms",
                "Vendor contracts require breach notification to us within 48 hours.",
                None,
                None,
            ),
            (
                "Offboarding vendors",
                "Data held by a terminated vendor must be returned or destroyed within 30 days, with written certification.",
                None,
                None,
            ),
        ],
    ),
    (
        "federal_it",
        "fed-ato",
        "System Authorization Handbook",
        0.95,
        [
            (
                "Authorization boundary",
                "The authorization boundary includes all components that process, store or transmit federal information for the system.",
                None,
                None,
            ),
            (
                "Continuous monitoring",
                "Vulnerability scans of the operating system, web applications and databases are performed monthly.",
                "Vulnerability scans of the operating system, web applications and databases are performed weekly; results are reported monthly.",
                "2025-04-01",
            ),
            (
                "Plan of action",
                "Open findings are tracked in the plan of action and milestones and reviewed every 30 days.",
                None,
                None,
            ),
            (
                "Reauthorization",
                "The system is reauthorized every three years or after a significant change.",
                None,
                None,
            ),
            (
                "Remediation",
                "High-risk vulnerabilities are remediated within 30 days of discovery.",
                "High-risk vulnerabilities are remediated within 15 days of discovery; critical within 7 days.",
                "2025-04-01",
            ),
        ],
    ),
    (
        "federal_it",
        "fed-cloud",
        "Cloud Services Procurement Guide",
        0.8,
        [
            (
                "FedRAMP",
                "Cloud services used for federal information must hold a FedRAMP Moderate authorization or higher.",
                None,
                None,
            ),
            (
                "Data residency",
                "Federal data must be stored within the continental United States.",
                None,
                None,
            ),
            (
                "Personnel screening",
                "Staff with logical access to federal data must complete a background investigation before access is granted.",
                None,
                None,
            ),
            (
                "Exit strategy",
                "Contracts must include a data export in an open format within 30 days of contract end.",
                None,
                None,
            ),
            (
                "Logging",
                "Audit logs are retained for at least one year online and three years in archive.",
                None,
                None,
            ),
        ],
    ),
    (
        "federal_it",
        "fed-ident",
        "Identity Assurance Directive",
        0.9,
        [
            (
                "Assurance levels",
                "Privileged users authenticate at identity assurance level 3 with phishing-resistant authenticators.",
                None,
                None,
            ),
            (
                "PIV",
                "Federal employees use PIV cards as the primary authenticator for network access.",
                None,
                None,
            ),
            (
                "Password policy",
                "Passwords for non-PIV accounts must be at least 12 characters and are checked against known-breached lists.",
                "Passwords for non-PIV accounts must be at least 15 characters and are checked against known-breached lists; periodic rotation is not required.",
                "2025-06-01",
            ),
            (
                "Account lockout",
                "Accounts lock after 10 consecutive failed attempts within 15 minutes.",
                None,
                None,
            ),
            (
                "Remote access",
                "Remote access uses an agency-managed VPN with device health checks.",
                None,
                None,
            ),
        ],
    ),
    (
        "federal_it",
        "fed-records",
        "Records Management Schedule",
        0.75,
        [
            (
                "Retention",
                "Temporary records are retained for seven years and then destroyed.",
                None,
                None,
            ),
            (
                "Email",
                "Email of senior officials is retained permanently under the Capstone approach.",
                None,
                None,
            ),
            (
                "Disposal",
                "Disposal of records is documented with a certificate of destruction.",
                None,
                None,
            ),
            (
                "Litigation holds",
                "Litigation holds suspend disposal for all records in scope until released by counsel.",
                None,
                None,
            ),
            (
                "Transfers",
                "Permanent records are transferred to the National Archives in electronic format.",
                None,
                None,
            ),
        ],
    ),
    (
        "healthcare_ops",
        "hc-discharge",
        "Discharge Planning Protocol",
        0.9,
        [
            (
                "Timing",
                "Discharge planning begins within 24 hours of admission for every inpatient.",
                None,
                None,
            ),
            (
                "Medication reconciliation",
                "A pharmacist completes medication reconciliation before discharge for patients on five or more medications.",
                "A pharmacist completes medication reconciliation before discharge for patients on three or more medications.",
                "2026-01-01",
            ),
            (
                "Follow-up",
                "A follow-up call is scheduled within 72 hours after discharge for high-risk patients.",
                None,
                None,
            ),
            (
                "Education",
                "Discharge education uses teach-back and is documented in the patient record.",
                None,
                None,
            ),
            (
                "Transport",
                "Transport needs are assessed at least 24 hours before the planned discharge time.",
                None,
                None,
            ),
        ],
    ),
    (
        "healthcare_ops",
        "hc-infection",
        "Infection Prevention Manual",
        0.95,
        [
            (
                "Hand hygiene",
                "Hand hygiene compliance is audited monthly on every unit by trained observers.",
                None,
                None,
            ),
            (
                "Isolation",
                "Patients with suspected airborne infections are placed in a negative-pressure room within one hour.",
                None,
                None,
            ),
            (
                "Sterilization",
                "Sterilizer biological indicators are run daily and with every load containing implants.",
                None,
                None,
            ),
            (
                "Staff screening",
                "Staff are screened for tuberculosis at hire and annually thereafter.",
                "Staff are screened for tuberculosis at hire; annual screening applies only after a known exposure.",
                "2025-11-01",
            ),
            (
                "Outbreak reporting",
                "Suspected outbreaks are reported to infection prevention within 2 hours.",
                None,
                None,
            ),
        ],
    ),
    (
        "healthcare_ops",
        "hc-audit",
        "Audit Preparation Checklist",
        0.7,
        [
            (
                "Document control",
                "Policies are reviewed at least every three years and carry an effective date.",
                None,
                None,
            ),
            (
                "Credentialing",
                "Provider credentials are verified at appointment and every two years.",
                None,
                None,
            ),
            ("Mock surveys", "A mock survey is conducted on each unit once a year.", None, None),
            (
                "Corrective actions",
                "Corrective action plans are submitted within 10 days of a survey finding.",
                None,
                None,
            ),
            (
                "Training records",
                "Annual compliance training completion is kept for six years.",
                None,
                None,
            ),
        ],
    ),
    (
        "healthcare_ops",
        "hc-privacy",
        "Patient Privacy Standard",
        0.95,
        [
            (
                "Minimum necessary",
                "Workforce members access only the minimum necessary protected health information for their role.",
                None,
                None,
            ),
            (
                "Access logging",
                "Access to electronic health records is logged and reviewed monthly for inappropriate access.",
                None,
                None,
            ),
            (
                "Disclosures",
                "Disclosures of protected health information outside treatment, payment and operations require written authorization.",
                None,
                None,
            ),
            (
                "Breach notification",
                "Breaches affecting 500 or more individuals are reported to regulators within 60 days.",
                None,
                None,
            ),
            (
                "De-identification",
                "Data sets released for research are de-identified under the safe-harbor method.",
                None,
                None,
            ),
        ],
    ),
    (
        "supply_chain",
        "sc-routing",
        "Standard Routing Guide",
        0.7,
        [
            (
                "Dock appointments",
                "Suppliers book dock appointments at least 48 hours in advance.",
                None,
                None,
            ),
            (
                "Missed dock date",
                "If a supplier misses the committed dock date, operations may approve air expedite at supplier cost.",
                "If a supplier misses the committed dock date, air expedite requires budget-control approval; operations may not approve it alone.",
                "2026-04-01",
            ),
            (
                "Carrier selection",
                "Shipments over 10,000 lb move by full truckload with a contracted carrier.",
                None,
                None,
            ),
            (
                "Labels",
                "Every pallet carries a GS1-128 label with the purchase order number.",
                None,
                None,
            ),
            (
                "Chargebacks",
                "Non-compliant shipments are charged back at 3 % of the invoice value.",
                None,
                None,
            ),
        ],
    ),
    (
        "supply_chain",
        "sc-nw-memo",
        "Northwest Lane Budget-Control Memo",
        0.95,
        [
            (
                "Scope",
                "This memo applies to the Northwest lanes NW-1 and NW-2 from 2026-04-01 to 2026-06-30.",
                None,
                None,
            ),
            (
                "Expedite approval",
                "Air expedite on the Northwest lanes requires budget-control approval before booking.",
                None,
                None,
            ),
            (
                "Escalation",
                "Requests are escalated to the regional logistics director when budget control does not answer within 4 hours.",
                None,
                None,
            ),
            ("Reporting", "Expedite spend on the Northwest lanes is reported weekly.", None, None),
            ("Expiry", "The memo expires on 2026-06-30 unless renewed in writing.", None, None),
        ],
    ),
    (
        "supply_chain",
        "sc-supplier",
        "Supplier Code of Conduct",
        0.85,
        [
            (
                "Audits",
                "Tier 1 suppliers accept a social-compliance audit every two years.",
                None,
                None,
            ),
            (
                "Subcontracting",
                "Subcontracting production requires our prior written consent.",
                None,
                None,
            ),
            (
                "Conflict minerals",
                "Suppliers report the smelters of tin, tantalum, tungsten and gold in their supply chain annually.",
                None,
                None,
            ),
            (
                "Working hours",
                "Working hours do not exceed 60 hours per week including overtime.",
                None,
                None,
            ),
            (
                "Remediation",
                "Critical audit findings are remediated within 30 days.",
                "Critical audit findings are remediated within 15 days and verified by a follow-up audit.",
                "2025-12-01",
            ),
        ],
    ),
    (
        "supply_chain",
        "sc-inventory",
        "Inventory Exception Procedure",
        0.75,
        [
            (
                "Cycle counts",
                "A-class items are cycle counted monthly, B-class quarterly and C-class twice a year.",
                None,
                None,
            ),
            (
                "Adjustments",
                "Inventory adjustments over $5,000 require approval by the site controller.",
                None,
                None,
            ),
            (
                "Quarantine",
                "Damaged goods are moved to quarantine within one shift of discovery.",
                None,
                None,
            ),
            (
                "Write-offs",
                "Write-offs over $25,000 require approval by the regional finance director.",
                None,
                None,
            ),
            (
                "Root cause",
                "Variances over 2 % of a location's value trigger a root-cause review.",
                None,
                None,
            ),
        ],
    ),
    (
        "financial_services",
        "fin-credit",
        "Credit Policy",
        0.9,
        [
            (
                "Exceptions",
                "An analyst may approve a policy exception up to $250,000 with a documented rationale.",
                "An analyst may approve a policy exception up to $250,000 with a documented rationale, but not while a guarantor review is pending.",
                "2026-01-01",
            ),
            (
                "Guarantors",
                "Guarantor financial statements are reviewed before any exception is approved.",
                None,
                None,
            ),
            (
                "Concentration",
                "Exposure to a single obligor may not exceed 10 % of tier 1 capital.",
                None,
                None,
            ),
            (
                "Annual review",
                "Every commercial credit facility is reviewed at least annually.",
                None,
                None,
            ),
            (
                "Risk ratings",
                "Risk ratings use a 10-grade scale; grades 8 to 10 are classified as criticized.",
                None,
                None,
            ),
        ],
    ),
    (
        "financial_services",
        "fin-risk-memo",
        "Risk Memo: Pending Guarantor Reviews",
        0.95,
        [
            (
                "Effect",
                "Effective 2026-02-15, no exception may be approved while a guarantor review is pending.",
                None,
                None,
            ),
            (
                "Escalation",
                "Exceptions blocked by a pending guarantor review are escalated to the chief credit officer.",
                None,
                None,
            ),
            (
                "Duration",
                "This memo remains in force until the credit policy is revised.",
                None,
                None,
            ),
            ("Scope", "The memo applies to all commercial lending units.", None, None),
            (
                "Reporting",
                "Blocked exceptions are reported to the risk committee monthly.",
                None,
                None,
            ),
        ],
    ),
    (
        "financial_services",
        "fin-disclosure",
        "Disclosure Controls Manual",
        0.85,
        [
            (
                "Sub-certification",
                "Business unit heads sub-certify disclosure controls every quarter.",
                None,
                None,
            ),
            (
                "Material events",
                "Potentially material events are reported to the disclosure committee within 24 hours.",
                None,
                None,
            ),
            (
                "Review",
                "Earnings releases are reviewed by legal, finance and investor relations before publication.",
                None,
                None,
            ),
            ("Retention", "Disclosure committee minutes are retained for seven years.", None, None),
            (
                "Quiet period",
                "The quiet period starts two weeks before the end of each fiscal quarter.",
                "The quiet period starts on the fifteenth day of the last month of each fiscal quarter.",
                "2025-10-01",
            ),
        ],
    ),
    (
        "financial_services",
        "fin-model-risk",
        "Model Risk Management Standard",
        0.9,
        [
            (
                "Inventory",
                "All models in use are recorded in the model inventory with an owner and a risk tier.",
                None,
                None,
            ),
            (
                "Validation",
                "Tier 1 models are independently validated before use and every year thereafter.",
                None,
                None,
            ),
            (
                "Monitoring",
                "Model performance is monitored quarterly against approved thresholds.",
                None,
                None,
            ),
            (
                "Overrides",
                "Manual overrides of model output are documented with a rationale and reviewed monthly.",
                None,
                None,
            ),
            (
                "Decommissioning",
                "Retired models are archived with their documentation for seven years.",
                None,
                None,
            ),
        ],
    ),
    (
        "financial_services",
        "fin-advice",
        "Client Communication Guidelines",
        0.6,
        [
            (
                "No individual advice",
                "Staff do not give individual investment advice unless they hold the required license.",
                None,
                None,
            ),
            (
                "Referral",
                "Questions needing individual advice are referred to a licensed advisor.",
                None,
                None,
            ),
            ("Records", "Client communications are archived for at least five years.", None, None),
            (
                "Social media",
                "Staff do not discuss specific securities on personal social media accounts.",
                None,
                None,
            ),
            (
                "Complaints",
                "Written complaints are logged and acknowledged within 2 business days.",
                None,
                None,
            ),
        ],
    ),
]

V1_EFFECTIVE = "2024-01-01"


def builtin_manifest() -> list[dict]:
    """The built-in corpus as manifest rows (one document each), fully deterministic."""
    rows = []
    for domain, slug, title, authority, clauses in _DOCS:
        blocks = []
        for index, (section, v1, v2, v2_from) in enumerate(clauses, start=1):
            versions = [
                {
                    "version": 1,
                    "text": v1,
                    "section": section,
                    "page_range": [index, index],
                    "effective_from": V1_EFFECTIVE,
                }
            ]
            if v2:
                versions[0]["effective_to"] = _day_before(v2_from)
                versions.append(
                    {
                        "version": 2,
                        "text": v2,
                        "section": section,
                        "page_range": [index, index],
                        "effective_from": v2_from,
                    }
                )
            blocks.append({"block_id": f"blk-{slug}-{index:02d}", "versions": versions})
        rows.append(
            {
                "document_id": f"doc-{slug}",
                "title": title,
                "domain": domain,
                "authority": authority,
                "blocks": blocks,
            }
        )
    return rows


def nist_manifest(path: Path) -> list[dict]:
    """NIST SP 800-53 controls: a document per family, a block per control, a version per revision."""
    families: dict[str, dict] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        control = json.loads(line)
        prefix = control["control_id"].split("-")[0]
        doc = families.setdefault(
            prefix,
            {
                "document_id": f"nist-800-53-{prefix}",
                "title": f"NIST SP 800-53 — {control['family']}",
                "domain": "federal_it",
                "authority": 0.95,
                "blocks": [],
            },
        )
        revisions = sorted(control["versions"], key=lambda v: v["published"])
        versions = []
        for number, rev in enumerate(revisions, start=1):
            entry = {
                "version": number,
                "text": f"{rev['title']}\n{rev['statement']}",
                "section": f"{control['control_id'].upper()} {rev['title']} ({rev['revision']})",
                "effective_from": rev["published"],
            }
            if number < len(revisions):
                entry["effective_to"] = _day_before(revisions[number]["published"])
            versions.append(entry)
        doc["blocks"].append({"block_id": f"nist-{control['control_id']}", "versions": versions})
    return list(families.values())


def _day_before(iso: str) -> str:
    return (dt.date.fromisoformat(iso) - dt.timedelta(days=1)).isoformat()


def as_jsonl(rows: list[dict]) -> str:
    return "\n".join(json.dumps(row, sort_keys=True) for row in rows) + "\n"
