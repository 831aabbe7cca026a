/**
 * The English UI strings of every surface the service draws itself: the widget's dialog, the
 * embeddable dashboard, the hosted portal and the e-mails to data principals. English is the
 * source: its keys are THE key set, and every other language (`./lang/<code>.ts`) must give
 * exactly these keys (the type checker and `catalogue.test.ts` both say so).
 *
 * `{name}` in a string is a placeholder the code fills in; a translation keeps every one of
 * them (it may move them). Notice texts are not here: they are the app's content, written per
 * language in the notice itself.
 */
export const en = {
  /** The consent dialog of svc-consent.v1.js (sent as the config's `ui`). */
  widget: {
    acceptAll: 'Accept all',
    rejectAll: 'Reject optional',
    save: 'Save my choices',
    required: 'Required',
    close: 'Close',
    manage: 'Manage consent',
    language: 'Language',
    loading: 'Loading…',
    dataItems: 'Data used',
    rightsTitle: 'Your rights',
    rightsText:
      'You can withdraw your consent at any time, as easily as you gave it, and ask to access, correct or erase your data.',
    withdraw: 'Withdraw consent',
    rights: 'Exercise your rights',
    portalAt: 'Manage your consent at',
    complain: 'Complain to the Data Protection Board of India',
    failed: 'Your choice could not be saved. Please try again.',
    loadFailed: 'The consent notice could not be loaded. Please try again later.',
    pending: 'Saved. It takes effect once a parent or guardian has verified it.',
  },
  /** The embeddable dashboard, svc-dashboard.v1.js. */
  dashboard: {
    title: 'Your consent history',
    ref: 'Reference ID',
    loading: 'Loading your consents…',
    empty: 'No consent records yet.',
    notice: 'Notice',
    status: 'Status',
    given: 'Given on',
    validUntil: 'Valid until',
    source: 'Given via',
    purposes: 'Purposes',
    purpose: 'Purpose',
    state: 'State',
    updated: 'Last changed',
    actions: 'Actions',
    grant: 'Grant',
    revoke: 'Revoke',
    erase: 'Erase',
    grantAll: 'Grant all',
    revokeAll: 'Revoke all',
    eraseAll: 'Erase all',
    confirmErase: 'Erase this data permanently? This cannot be undone.',
    confirm: 'Yes, erase',
    cancel: 'Cancel',
    more: 'Show more',
    retry: 'Try again',
    failed: 'That did not work. Please try again.',
    loadFailed: 'Your consents could not be loaded.',
    noRef: 'No reference ID was given, so there is nothing to show.',
    done_grant: 'Consent granted.',
    done_revoke: 'Consent revoked.',
    done_erase: 'Data erased.',
    s_granted: 'Granted',
    s_denied: 'Not given',
    s_revoked: 'Revoked',
    s_expired: 'Expired',
    s_erased: 'Erased',
    s_active: 'Active',
    s_partially_revoked: 'Partly revoked',
    src_widget: 'website',
    src_api: 'app',
    src_portal: 'consent portal',
    g_title: 'Your grievances',
    g_intro:
      'Not happy with how your data is handled? Tell us; we must answer within the period the law sets.',
    g_none: 'You have not filed a grievance.',
    g_subject: 'Subject',
    g_text: 'Your grievance',
    g_file: 'File grievance',
    g_done: 'Your grievance was filed. The answer is due by',
    g_filed: 'Filed on',
    g_due: 'Answer due by',
    g_answer: 'Answer',
    g_open: 'Awaiting answer',
    g_answered: 'Answered',
    receipt: 'Download receipt',
  },
  /** The hosted portal: its page (rendered by the server) and portal.js. */
  portal: {
    title: 'Manage your consent',
    titleApp: 'Manage your consent – {app}',
    skip: 'Skip to content',
    intro:
      'These are the consents you gave. You can give, withdraw or erase each of them, for every purpose at once or one purpose at a time. Withdrawing is as easy as giving.',
    introApp:
      'These are the consents you gave to {app}. You can give, withdraw or erase each of them, for every purpose at once or one purpose at a time. Withdrawing is as easy as giving.',
    reference: 'Your reference:',
    loading: 'Loading your consents…',
    noscript: 'This page needs JavaScript to show and change your consents.',
    oldLinkTitle: 'This link is no longer accepted',
    oldLinkText:
      'For your protection, links to manage your consent now keep their key out of the web address. Use the “Manage consent” link in a more recent e-mail, or ask the organisation that wrote to you for a new one.',
    contact:
      'Questions about your data, or a grievance? Contact {app} at {email}. If your grievance is not resolved, you may complain to the Data Protection Board of India.',
    s_granted: 'Given',
    s_denied: 'Not given',
    s_revoked: 'Withdrawn',
    s_expired: 'Expired',
    s_erased: 'Erased',
    t_active: 'Active',
    t_partially_revoked: 'Partly withdrawn',
    grant: 'Give consent',
    revoke: 'Withdraw',
    erase: 'Erase',
    grantAll: 'Give all',
    revokeAll: 'Withdraw all',
    eraseAll: 'Erase all',
    opFor: '{verb} for {purpose}',
    opAll: '{verb} purposes of {title}',
    groupAll: 'All purposes of {title}',
    allOf: 'all purposes of {title}',
    done_grant: 'Consent for {what} given.',
    done_revoke: 'Consent for {what} withdrawn.',
    done_erase: 'Consent for {what} erased.',
    confirmErase:
      'Erase {what}? The organisation will be told to delete this data. This cannot be undone.',
    consent: 'Consent',
    meta: 'Given on {created}. Valid until {expires}.',
    caption: 'Purposes',
    colPurpose: 'Purpose',
    colChoice: 'Your choice',
    colChanged: 'Last changed',
    colChange: 'Change',
    empty: 'No consent is recorded for this reference.',
    more: 'Show older consents',
    expired:
      'This link has expired or is no longer valid. Use the link in a more recent e-mail, or ask for a new one.',
    wrongLink: 'This link is not valid for this page.',
    incomplete:
      'This link is incomplete. Open the “Manage consent” link from your e-mail exactly as it was sent.',
    requestFailed: 'The request failed ({status})',
    networkFailed: 'The request failed',
    receiptFor: 'Download the signed receipt of {title}',
    receiptSaved: 'The signed receipt was downloaded.',
  },
  /** E-mails to data principals (workers/notifier/templates.ts). */
  mail: {
    manage: 'Manage consent',
    reference: 'Your reference: {referenceId}',
    contact: 'Questions about your data? Contact {app} at {email}.',
    allPurposes: 'all purposes',
    grantSubject: '{app} asks for your consent',
    grantBody1: '{app} would like your consent to process your personal data.',
    grantBody2:
      'Use the link below to see what is asked and to give or refuse your consent. You can withdraw it at any time, as easily as you gave it.',
    grantWhy: 'You receive this e-mail because {app} asked for your consent.',
    expirySubjectOn: 'Your consent to {app} expires on {date}',
    expirySubjectSoon: 'Your consent to {app} expires soon',
    expiryBodyOn: 'Your consent to {app} for {purposes} expires on {date}.',
    expiryBodySoon: 'Your consent to {app} for {purposes} expires soon.',
    expiryBody2:
      'After that, {app} stops processing your data for these purposes unless you give your consent again.',
    expiryWhy: 'You receive this reminder because you gave consent to {app}.',
    erasureSubject: '{app} has received your erasure request',
    erasureBody1: 'Your request to erase your data held by {app} for {purposes} has been recorded.',
    erasureBody2: '{app} has been told to delete this data and must confirm when it has done so.',
    erasureWhy: 'You receive this acknowledgement because an erasure of your data was requested.',
    inactivityWarnSubject: 'Your data held by {app} will be erased on {date}',
    inactivityWarn1:
      '{app} erases the personal data of people who have not used its service for {days} days. You have not for a while, so your data will be erased at {moment}.',
    inactivityWarn2:
      'To keep your data, use your account with {app}, or open the link below, before then. Nothing else is needed.',
    inactivityWarnWhy:
      'You receive this notice because your data held by {app} is due to be erased for inactivity.',
    inactivityErasedSubject: '{app} has erased your data after a period of inactivity',
    inactivityErased1:
      'As announced, your data held by {app} for {purposes} has been erased because you had not used its service for the period it keeps data of inactive people.',
    inactivityErasedWhy: 'You receive this notice because your data was erased for inactivity.',
    grievanceFiledSubject: '{app} has received your grievance',
    grievanceFiled1: 'Your grievance "{subject}" ({id}) was received by {app} on {date}.',
    grievanceFiled2: '{app} must answer it by {due}. You will get an e-mail when it does.',
    grievanceEscalate:
      'If your grievance is not resolved, you may complain to the Data Protection Board of India.',
    grievanceFiledWhy: 'You receive this e-mail because a grievance was filed in your name.',
    grievanceAnsweredSubject: '{app} has answered your grievance',
    grievanceResolved: '{app} has resolved your grievance "{subject}" ({id}). Its answer:',
    grievanceRejected: '{app} did not uphold your grievance "{subject}" ({id}). Its answer:',
    grievanceUnsatisfied:
      'If you are not satisfied with this answer, you may complain to the Data Protection Board of India.',
    grievanceAnsweredWhy: 'You receive this e-mail because you filed a grievance.',
    breachSubject: 'Important: a personal data breach at {app}',
    breachIntro:
      '{app} is informing you of a personal data breach that affects your personal data. It was detected on {date}.',
    breachWhat: 'What happened: {text}',
    breachConsequences: 'Likely consequences for you: {text}',
    breachMitigations: 'What {app} has done and is doing to reduce the risk: {text}',
    breachSteps: 'What you can do to protect yourself: {text}',
    breachContact: 'Whom to contact about this breach: {contact}.',
    breachWhy:
      'You receive this notice because {app} must tell every person whose data a breach affects.',
  },
} as const;

export type Surface = keyof typeof en;
export const SURFACES = Object.keys(en) as Surface[];

/** One language's strings: exactly the English keys, each a string. */
export type Catalogue = {
  readonly [S in Surface]: { readonly [K in keyof (typeof en)[S]]: string };
};
export type Strings<S extends Surface> = Catalogue[S];
